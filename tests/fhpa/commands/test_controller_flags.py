"""`fhpa controller run` refuses a malformed number or HOST:PORT while parsing its flags, in words: not
the name of a type function, not Python's "invalid literal for int()" once the health server binds."""

from __future__ import annotations

import pytest

from fhpa.cli import main


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        ("--metrics-bind", "127.0.0.1:abc", "'127.0.0.1:abc' must be HOST:PORT, with a port from 0 to 65535"),
        ("--metrics-bind", "8080", "'8080' must be HOST:PORT"),
        ("--metrics-bind", "h:70000", "with a port from 0 to 65535"),
        ("--shards", "two", "'two' is not a whole number"),
        ("--resync-period", "soon", "'soon' is not a number"),
        ("--failover-grace", "nan", "'nan' is not a number"),
    ],
)
def test_a_malformed_flag_is_refused_in_words(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, words: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["controller", "run", flag, value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"fhpa controller run: error: argument {flag}: " in err and words in err
    assert "invalid literal" not in err and "_number" not in err and "invalid _" not in err


def test_an_empty_host_still_means_every_address() -> None:
    from fhpa.commands.controller import _host_port

    assert _host_port(":8080") == ":8080" and _host_port("0.0.0.0:0") == "0.0.0.0:0"


def test_a_member_object_cap_below_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["controller", "run", "--member-max-objects", "0"])
    assert exit_.value.code == 2 and "must be at least 1, got 0" in capsys.readouterr().err
