"""Every image and relative link in README.md, docs/, experiments/ and the models' READMEs points to a
file of the repository, so a figure or page the docs show is never missing from a clean checkout."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "experiments").glob("*.md")),
    *sorted((ROOT / "models").rglob("README.md")),
]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s#]+)(?:#[^)]*)?\)")


def _tracked() -> set[Path] | None:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None  # not a git checkout (an sdist): existence is checked instead
    return {(ROOT / line).resolve() for line in out.splitlines()}


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_links_point_to_files_of_the_repository(page):
    tracked = _tracked()
    missing = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        path = (page.parent / target).resolve()
        if not path.exists() or (tracked is not None and path.is_file() and path not in tracked):
            missing.append(target)
    assert not missing, f"{page.relative_to(ROOT)} links to files that are not in the repository: {missing}"
