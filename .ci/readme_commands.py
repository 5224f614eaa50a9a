"""Print the README's set-up commands, one per line as ``LABEL<TAB>COMMAND`` (``main job``, ``tests``).

.ci/run runs each exactly as written, in a fresh clone; tests/test_docs.py reads them with the same function.
"""

from __future__ import annotations

import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
SECTION = "## Set-up: the two commands"


def readme_commands(text: str) -> dict[str, str]:
    """The set-up block's commands by the comment above each (``# main job: ...`` -> ``main job``)."""
    body = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    block = body.split("```bash\n", 1)[1].split("```", 1)[0]
    out: dict[str, str] = {}
    label = None
    for line in block.splitlines():
        if line.startswith("# "):
            label = line[2:].split(":", 1)[0]
        elif line.strip() and label:
            out[label] = line.strip()
    return out


if __name__ == "__main__":
    for label, command in readme_commands(README.read_text()).items():
        sys.stdout.write(f"{label}\t{command}\n")
