"""A malformed kubeconfig given on the command line is one line naming the file and what is wrong, for
`explain`, `controller run` and `cluster`: never a traceback, never the client's internals."""

from __future__ import annotations

from pathlib import Path

import pytest

from fhpa.cli import main

MALFORMED = {
    "yaml": ("clusters: [{name: a", "is not valid YAML at line 1"),
    "top": ("- 1\n- 2\n", "is not a kubeconfig: expected a mapping at the top"),
    "section": ("clusters: 5\n", "clusters must be a list"),
    "entry": ("current-context: a\ncontexts: [{name: a, context: 7}]\n", "contexts[0] (a) has no context"),
    "nameless": ("users: [{user: {token: t}}]\n", "users[0] must be a mapping with a name"),
}
COMMANDS = {
    "explain": (
        ["explain", "shop/web"],
        "fhpa explain: cannot use the kubeconfig for the management cluster: ",
    ),
    "controller run": (["controller", "run"], "fhpa controller run: --kubeconfig: "),
    "cluster list": (["cluster", "list"], "fhpa cluster list: cannot use the kubeconfig for the management "),
}


@pytest.mark.usefixtures("keep_root_logger")
@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_kubeconfig_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, case: str
) -> None:
    text, problem = MALFORMED[case]
    path = tmp_path / "config"
    path.write_text(text)
    argv, prefix = COMMANDS[command]
    flag = "--management-kubeconfig" if argv[0] == "cluster" else "--kubeconfig"
    code = main([*argv, flag, str(path)])
    err = capsys.readouterr().err
    assert code in (1, 2)
    assert err.startswith(prefix) and err.count("\n") == 1, err
    assert str(path) in err and problem in err
    assert "Traceback" not in err and "object has no attribute" not in err and "NoneType" not in err
