"""Wire protocols: one module each, all fed by the gateway's one delta stream; each exposes ``routes(gateway)``."""
