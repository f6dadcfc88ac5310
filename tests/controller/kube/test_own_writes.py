"""A write in flight recognises its own echo by the resourceVersion it is conditional on, once."""

from __future__ import annotations

from controller.kube.own_writes import OwnWrites

KEY = ("default", "h1")


def version(rv: str) -> dict[str, dict[str, str]]:
    return {"metadata": {"resourceVersion": rv}}


def test_the_first_change_from_the_version_written_against_is_the_echo() -> None:
    own = OwnWrites()
    with own.writing("hpa", KEY, "5"):
        assert not own.is_echo("hpa", ("default", "other"), version("5"))  # another object
        assert not own.is_echo("workload", KEY, version("5"))  # another resource
        assert not own.is_echo("hpa", KEY, version("4"))  # from another version: not ours
        assert own.is_echo("hpa", KEY, version("5"))
        assert not own.is_echo("hpa", KEY, version("5"))  # once per write


def test_a_create_expects_no_previous_object() -> None:
    own = OwnWrites()
    with own.writing("hpa", KEY, None):
        assert not own.is_echo("hpa", KEY, version("1"))
        assert own.is_echo("hpa", KEY, None)


def test_nothing_is_expected_once_the_write_ended() -> None:
    own = OwnWrites()
    with own.writing("hpa", KEY, "5"):
        pass
    assert not own.is_echo("hpa", KEY, version("5"))
