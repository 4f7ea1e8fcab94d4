"""The demo's flags (`python -m testbed.demo`): real Slack needs a channel and a token, and
nothing else starts."""

from __future__ import annotations

import pytest

from guardian.cli import main as guardian_main
from testbed.demo.__main__ import main as demo_main


@pytest.mark.parametrize(
    "argv",
    [
        ["--slack-token", "xoxb-1"],
        ["--slack-channel", "C0123"],
        ["--time-factor", "0"],
    ],
)
def test_bad_flag_combinations_exit_2_before_starting_anything(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    assert demo_main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "python -m testbed.demo:" in err


def test_help_lists_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        demo_main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--timeout", "--workdir", "--time-factor", "--slack-channel", "--pid-file"):
        assert flag in out


def test_the_product_has_no_demo_command(capsys: pytest.CaptureFixture[str]) -> None:
    # The demo wires the test bed's stand-ins; the shipped controller does not carry it.
    with pytest.raises(SystemExit) as exit_info:
        guardian_main(["demo"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'demo'" in capsys.readouterr().err
