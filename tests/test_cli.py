from tests.clirun import run_cli


def test_help_lists_commands():
    out = run_cli("--help")
    assert out.returncode == 0
    assert "usage: turnkit" in out.stdout


def test_no_command_prints_help_and_fails():
    out = run_cli()
    assert out.returncode == 2
    assert "usage: turnkit" in out.stdout


def test_version():
    out = run_cli("--version")
    assert out.returncode == 0 and "turnkit" in out.stdout


def test_demo_round_trip_parses_the_reply_and_renders_the_next_prompt():
    import json

    out = run_cli("demo", "--round-trip")
    assert out.returncode == 0, out.stderr
    _, rest = out.stdout.split("--- model reply, streamed in 8-character chunks: OpenAI-style deltas ---\n")
    deltas_text, rest = rest.split("--- parsed message ---\n")
    message_text, next_prompt = rest.split("--- next prompt, with the parsed message appended ---\n")
    deltas = [json.loads(line) for line in deltas_text.splitlines()]
    message = json.loads(message_text)
    assert "".join(d.get("content", "") for d in deltas) == message["content"] == "It is 22 °C in Paris right now."
    assert "".join(d.get("reasoning_content", "") for d in deltas) == message["reasoning_content"]
    assert next_prompt.endswith("<|im_start|>assistant\nIt is 22 °C in Paris right now.<|im_end|>\n")


def test_demo_live_runs_the_tool_loop():
    out = run_cli("demo", "--live", "--delay", "0")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "[tool call get_current_temperature] " in text and '"location": "Paris, France"' in text
    assert "[tool result get_current_temperature: ok] 22.0" in text
    assert "It is 22 °C in Paris right now." in text and "done after 2 steps (stop)" in text


def test_a_command_imports_only_its_own_module():
    """``turnkit batch ...`` builds the batch command's parser alone (every command's module costs ~0.1 s to
    import, paid before a batch's workers start); ``--help`` and an unknown command still see them all."""
    import subprocess
    import sys

    from turnkit.cli import COMMANDS

    code = (
        "import sys; from turnkit.cli import main; main(['formats']); "
        "print(sorted(m for m in sys.modules if m.startswith('turnkit.cli.')), file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr.strip().splitlines()[-1] == "['turnkit.cli.formats']"
    unknown = run_cli("nosuch")
    assert unknown.returncode == 2
    for name in COMMANDS:
        assert f"'{name.replace('_', '-')}'" in unknown.stderr
    assert "partial-types" in run_cli("--help").stdout


def test_the_command_leaves_its_objects_to_the_process_exit():
    """Run as the program (``argv`` ``None``), the command freezes the garbage collector's objects before the
    interpreter's last collections, which walked them all (~35-90 ms after a batch run, ~200 ms with pandas
    loaded); called with ``argv``, as from a Python program or a test, it leaves them alone."""
    import subprocess
    import sys

    from tests.clirun import cli_env

    code = (
        "import atexit, gc, sys; from turnkit.cli import main; "
        "atexit.register(lambda: print('frozen', gc.get_freeze_count(), file=sys.stderr)); "
    )
    for call, frozen in (("sys.argv[1:] = ['formats']; main()", True), ("main(['formats'])", False)):
        out = subprocess.run([sys.executable, "-c", code + call], capture_output=True, text=True, env=cli_env())
        assert out.returncode == 0, out.stderr
        count = int(out.stderr.split("frozen ")[1])
        assert (count > 0) is frozen, out.stderr
