"""The documentation against the code it describes: README.md and docs/*.md stay short where promised, their
links resolve, every command and option they name exists in the CLI's parser, the README's test command is
the one CI runs, and they name no path outside the repository and no tracker number without its repository.
Pure file reads and argparse: no measuring."""

from __future__ import annotations

import argparse
import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from adprof import model
from adprof.cli import build_parser
from adprof.render import jsonout

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS, ROOT / "examples" / "native" / "README.md"]
MAX_README_LINES = 250

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
COMMAND = re.compile(r"\badprof (check|ratio|halve|guard|flame|report|compare|hunt)\b")
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)")
OUTSIDE = re.compile(r"\.\./shared|/work/")
# our own tracker's numbers: "issue 17", or a bare "#19" (upstream ones are written owner/repo#N)
OWN_ISSUE = re.compile(r"\b[Ii]ssues? \d+|(?<![\w/.-])#\d+\b")


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    out, fenced = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            out.add(_slug(line.lstrip("#")))
    return out


def _code_texts(page: Path) -> list[str]:
    """Every inline code span and every line of a fenced or indented code block."""
    texts, fenced = [], False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced or line.startswith("    "):
            texts.append(line)
        else:
            texts.extend(CODE_SPAN.findall(line))
    return texts


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _options(p: argparse.ArgumentParser) -> set[str]:
    return {s for a in p._actions for s in a.option_strings}


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_readme_fits_on_a_page():
    n = len(README.read_text().splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines (at most {MAX_README_LINES}): move detail to docs/"


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_relative_links_resolve(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {_rel(dest)}")
    assert not broken, f"{_rel(page)}: " + "; ".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_no_paths_outside_the_repository_nor_own_issue_numbers(page):
    bad = []
    for n, line in enumerate(page.read_text().splitlines(), 1):
        bad += [f"line {n}: {m.group(0)!r}" for m in OUTSIDE.finditer(line)]
        bad += [f"line {n}: {m.group(0)!r}" for m in OWN_ISSUE.finditer(line)]
    assert not bad, f"{_rel(page)}: " + "; ".join(bad)


def test_readme_command_table_names_real_commands_and_options():
    subs = _subparsers()
    rows = [r for r in _section(README.read_text(), "Commands").splitlines() if r.startswith("| `adprof ")]
    named = set()
    for row in rows:
        cell = row.split("|")[1]
        m = COMMAND.search(cell)
        if m is None:  # "adprof COMMAND --cmd ...": the option of every command that takes it
            assert "COMMAND" in cell, row
            for opt in OPTION.findall(row):
                assert any(opt in _options(p) for p in subs.values()), f"{opt} is no option of any command"
            continue
        named.add(m.group(1))
        unknown = [o for o in OPTION.findall(row) if o not in _options(subs[m.group(1)])]
        assert not unknown, f"adprof {m.group(1)} has no option {unknown}"
    assert named == set(subs), f"the README's command table lists {sorted(named)}, the CLI has {sorted(subs)}"


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_commands_and_options_in_code_exist(page):
    """An ``adprof COMMAND ... --option`` in a code span or block names an option that COMMAND has."""
    subs = _subparsers()
    bad = []
    for text in _code_texts(page):
        for m in COMMAND.finditer(text):
            rest = text[m.end() :].split("#", 1)[0]  # a shell comment ends the command
            rest = re.split(r"\badprof |[|;]|&&", rest)[0]  # so does the next command
            unknown = [o for o in OPTION.findall(rest) if o not in _options(subs[m.group(1)])]
            bad += [f"adprof {m.group(1)} {o}" for o in unknown]
    assert not bad, f"{_rel(page)} names options the CLI does not have: {sorted(set(bad))}"


def _ci_readme_module():
    spec = importlib.util.spec_from_file_location("readme_commands", ROOT / ".ci" / "readme_commands.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _readme_commands() -> dict[str, str]:
    """The set-up block's commands by their comment (``main job``, ``tests``), as .ci/run reads them."""
    return _ci_readme_module().readme_commands(README.read_text())


def _words(line: str) -> list[str]:
    """A shell line's words, up to ``||`` (what follows is .ci/run's fallback message)."""
    return shlex.split(line.split("||", 1)[0])


def test_ci_runs_both_readme_commands_as_written():
    """.ci/run takes the README's commands from the README itself (no copy to drift), each whole: a fresh venv,
    its activation, the install with the README's extra, the command; and ends with the README's test command."""
    commands = _readme_commands()
    assert set(commands) == {"main job", "tests"}, commands
    run = (ROOT / ".ci" / "run").read_text()
    assert "python3 .ci/readme_commands.py" in run and 'bash -c "$command"' in run
    for label, extra, last in (("main job", "'.[plot]'", "adprof check"), ("tests", "'.[dev]'", "python -m pytest")):
        steps = [s.strip() for s in commands[label].split("&&")]
        assert steps[:3] == ["python3 -m venv .venv", ". .venv/bin/activate", f"pip install -e {extra}"], steps
        assert steps[3].startswith(last), steps
    ci_steps = [_words(line) for line in run.splitlines() if "pytest" in line and not line.lstrip().startswith("#")]
    readme_pytest = shlex.split(commands["tests"].split("&&")[-1])
    assert readme_pytest in ci_steps, f"README runs {readme_pytest}, .ci/run's full suite does not"


def test_readme_main_job_checks_a_real_file():
    steps = [shlex.split(s) for s in _readme_commands()["main job"].split("&&")]
    assert steps[-1][:2] == ["adprof", "check"] and "check" in _subparsers()
    assert all((ROOT / arg).is_file() for arg in steps[-1][2:]), steps[-1]


def test_readme_names_every_verdict():
    table = _section(README.read_text(), "Verdicts")
    named = set(re.findall(r"`([a-z-]+)`", table))
    missing = [v for v in model.VERDICTS if v not in named]
    assert not missing, f"the README's verdict table lacks {missing}"
    missing_memory = [v for v in model.MEMORY_VERDICTS if v not in named]
    assert not missing_memory, f"the README's memory verdict table lacks {missing_memory}"
    known = {*model.VERDICTS, *model.MEMORY_VERDICTS, "guard", "max_exponent", "--memory", "not measured"}
    assert named - known <= set(), "a verdict the model does not have"


def test_accuracy_tables_sit_between_their_markers():
    readme = README.read_text()
    table = readme.split("<!-- accuracy:begin -->", 1)[1].split("<!-- accuracy:end -->", 1)[0]
    rows = [r for r in table.strip().splitlines() if r.startswith("| ")]
    assert [r.split("|")[1].strip() for r in rows[1:]] == ["linear", "mild", "superlinear", "exponential"]
    classification = (ROOT / "docs" / "classification.md").read_text()
    assert classification.index("<!-- accuracy-full:begin -->") < classification.index("<!-- accuracy-full:end -->")


def test_json_doc_describes_the_schema_version_written():
    assert f"## Schema {jsonout.SCHEMA}\n" in (ROOT / "docs" / "json.md").read_text()
