"""The page list (ui.navigation.PAGES) is the one source: files numbered 1..N in sidebar order, found by title."""

import re
from pathlib import Path

import pytest

from ui.navigation import PAGES, page_file

ROOT = Path(__file__).resolve().parent.parent


def test_page_files_are_numbered_one_to_n_in_sidebar_order():
    numbers = [int(re.match(r"app_pages/(\d+)_\w+\.py$", path).group(1)) for path, *_ in PAGES]
    assert numbers == list(range(1, len(PAGES) + 1))


def test_every_page_file_is_listed_once():
    listed = sorted(path for path, *_ in PAGES)
    on_disk = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "app_pages").glob("*.py"))
    assert listed == on_disk


def test_titles_and_url_paths_are_unique():
    assert len({page[1] for page in PAGES}) == len(PAGES)
    assert len({page[3] for page in PAGES}) == len(PAGES)


def test_page_file_finds_a_page_by_title():
    assert page_file("Devices") == PAGES[2][0]
    assert page_file("Home") == PAGES[0][0]
    with pytest.raises(KeyError, match="no page titled 'Nope'"):
        page_file("Nope")
