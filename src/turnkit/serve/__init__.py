"""turnkit's server (``turnkit[serve]``)."""
