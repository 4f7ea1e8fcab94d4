"""`guardian demo`'s flags: real Slack needs a channel and a token, nothing else starts."""

from __future__ import annotations

import pytest

from guardian.cli import main as guardian_main


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--slack-token", "xoxb-1"],
        ["demo", "--slack-channel", "C0123"],
        ["demo", "--time-factor", "0"],
    ],
)
def test_bad_flag_combinations_exit_2_before_starting_anything(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    assert guardian_main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "guardian demo:" in err


def test_help_lists_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        guardian_main(["demo", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--timeout", "--workdir", "--time-factor", "--slack-channel", "--pid-file"):
        assert flag in out
