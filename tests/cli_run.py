"""Running the ``junobench`` command line inside a test."""

from __future__ import annotations

from junobench.cli import main


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``junobench ARGV...`` (``capsys`` is pytest's)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
