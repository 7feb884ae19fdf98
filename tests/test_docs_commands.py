"""Every command the README and the reader docs show is a command the appliance has, with options it
takes; the everyday ones run for real on a small index and do what the docs say they print.

Commands are the `$ …` lines of ```console blocks. `appliance …` lines parse against the CLI (an
unknown command or option fails here); `make X` names a Makefile target; `install.pyz` takes
`appliance install`'s options; a `curl` to the API sends a body its route accepts.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from appliance.cli.main import cli
from appliance.server.schemas import AskRequest

REPO = Path(__file__).resolve().parent.parent
READER_DOCS = [REPO / "README.md", REPO / "docs" / "operators.md", REPO / "docs" / "admins.md"]
CONSOLE_BLOCK = re.compile(r"```console\n(.*?)```", re.DOTALL)
APPLIANCE = re.compile(r"^(?:\S*/)?appliance\s")
# What runs for real on the small index: reads, and token and audit commands on a throw-away home.
RUN = {("ask",), ("search",), ("status",), ("config", "show"), ("token", "create"), ("token", "list")}
RUN |= {("token", "revoke"), ("audit", "verify"), ("audit", "tail"), ("models", "list"), ("models", "verify")}
SMALL_CORPUS = [
    "SOP-CL-004-chlorine-cylinder-change.md",
    "SOP-CL-001-chlorine-gas-leak-response.pdf",
    "SOP-FLT-001-filter-backwash.pdf",
    "SOP-FLT-002-turbidity-exceedance-response.md",
]


def shown_commands(text: str) -> list[str]:
    """The `$ ` lines of console blocks, continuation lines joined, trailing `# comments` dropped."""
    commands: list[str] = []
    for block in CONSOLE_BLOCK.findall(text):
        pending = ""
        for line in block.splitlines():
            if not pending and not line.startswith("$ "):
                continue
            line = line[2:] if not pending else line.strip()
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            command = re.sub(r"\s+#\s.*$", "", pending + line).strip()
            commands.append(command)
            pending = ""
    return commands


def all_commands() -> list[tuple[str, str]]:
    return [(path.name, command) for path in READER_DOCS for command in shown_commands(path.read_text("utf-8"))]


def appliance_commands() -> list[tuple[str, str]]:
    return [(doc, command) for doc, command in all_commands() if APPLIANCE.match(command)]


def resolve(args: list[str]) -> tuple[list[str], click.Command, list[str]]:
    """The command path, the command and its own arguments; UsageError for an unknown command."""
    command: click.Command = cli
    path: list[str] = []
    rest = list(args)
    context = click.Context(cli, info_name="appliance")
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        sub = command.get_command(context, rest[0])
        if sub is None:
            raise click.UsageError(f"no command {' '.join([*path, rest[0]])!r}")
        path.append(rest.pop(0))
        command = sub
        context = click.Context(command, info_name=path[-1], parent=context)
    return path, command, rest


def check_parses(args: list[str]) -> list[str]:
    """Parse like click does, without running or checking that paths exist: unknown options, missing
    or extra arguments and bad choices raise UsageError."""
    path, command, rest = resolve(args)
    lenient = [
        click.Argument([p.name], nargs=p.nargs, required=p.required) if isinstance(p, click.Argument) else p
        for p in command.params
    ]
    probe = click.Command(command.name, params=lenient)
    probe.make_context(" ".join(["appliance", *path]), rest)
    return path


def arguments(command: str) -> list[str]:
    return shlex.split(command)[1:]


@pytest.mark.parametrize(("doc", "command"), appliance_commands())
def test_every_appliance_command_shown_parses(doc: str, command: str) -> None:
    check_parses(arguments(command))


@pytest.mark.parametrize(
    "command",
    ["appliance ask --nope 'q'", "appliance tokn list", "appliance search", "appliance ask --mode guess 'q'"],
)
def test_a_command_the_appliance_does_not_have_is_caught(command: str) -> None:
    with pytest.raises(click.UsageError):
        check_parses(arguments(command))


def test_the_docs_show_the_everyday_commands() -> None:
    shown = {tuple(check_parses(arguments(c))) for _, c in appliance_commands()}
    assert {("ask",), ("search",), ("status",), ("token", "create"), ("audit", "verify"), ("verify",)} <= shown


def test_every_make_target_shown_exists() -> None:
    targets = set(re.findall(r"^([a-z][\w-]*):", (REPO / "Makefile").read_text(), re.MULTILINE))
    shown = [c.split()[1] for _, c in all_commands() if c.startswith("make ")]
    assert shown and set(shown) <= targets


def test_the_installer_lines_take_the_install_commands_options() -> None:
    lines = [c for _, c in all_commands() if "install.pyz" in c and c.startswith("python3")]
    assert lines
    for line in lines:
        check_parses(["install", *shlex.split(line)[2:]])


def test_every_curl_shown_sends_a_body_its_route_accepts() -> None:
    texts = "\n".join(path.read_text("utf-8") for path in READER_DOCS)
    bodies = re.findall(r"curl -s \S+/v1/ask .*?-d\s+'(\{.*?\})'", texts, re.DOTALL)
    assert bodies
    for body in bodies:
        AskRequest.model_validate(json.loads(body))


@pytest.fixture(scope="module")
def small_index(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliRunner]:
    """Four SOPs of docs_corpus indexed in a throw-away home, the CLI run from the folder above them."""
    root = tmp_path_factory.mktemp("docs_commands")
    corpus = root / "docs_corpus"
    corpus.mkdir()
    for name in SMALL_CORPUS:
        shutil.copy(REPO / "docs_corpus" / name, corpus / name)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        patch.delenv("APPLIANCE_CONFIG", raising=False)
        patch.setenv("APPLIANCE_HOME", str(root / "home"))
        patch.setenv("APPLIANCE_MODELS_DIR", str(models_dir))
        patch.setenv("APPLIANCE_GENERATOR_MODEL", "smollm2-135m-instruct")
        runner = CliRunner()
        result = runner.invoke(cli, ["ingest", "docs_corpus"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        yield runner


def test_the_everyday_commands_run_as_shown(small_index: CliRunner) -> None:
    ran = []
    for doc, command in appliance_commands():
        args = arguments(command)
        path, _, _ = resolve(args)
        if tuple(path) in RUN:
            result = small_index.invoke(cli, args, catch_exceptions=False)
            assert result.exit_code == 0, f"{doc}: {command}\n{result.output}"
            ran.append(command)
    assert len(ran) >= 10


def test_the_readme_answer_is_what_ask_prints(small_index: CliRunner) -> None:
    readme = (REPO / "README.md").read_text("utf-8")
    block = re.search(r"```console\n\$ (appliance ask [^\n]+)\n(.*?)```", readme, re.DOTALL)
    assert block is not None
    printed = small_index.invoke(cli, arguments(block.group(1)), catch_exceptions=False).output
    shown = [line for line in block.group(2).splitlines() if line.strip() not in ("…", "")]
    assert shown
    for line in shown:
        assert line in printed
