"""The dashboard's experiment panel through the ASGI test client: only for a workflow with an experiment."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.experiments.population import sample_with_experiment, write_arm
from tests.web.conftest import Site


@pytest.fixture
def experiment_config(tmp_path: Path) -> Path:
    """The sample config with support_answer running the hard_vs_soft experiment."""
    return sample_with_experiment(tmp_path / "config")


def panel_of(page: str) -> str:
    return page.split('<section class="dashboard-block experiment" id="experiment-support_answer"', 1)[1].split(
        "</section>", 1
    )[0]


def test_the_panel_shows_the_arms_the_differences_and_the_peek_warning(
    site_factory: Callable[..., Site], experiment_config: Path
) -> None:
    """100 sessions per arm, soft followed more: per arm sessions and rates, the follow difference, the warning."""
    site = site_factory(config=str(experiment_config))
    write_arm(site.backend.store, "hard", 100, 30)
    write_arm(site.backend.store, "soft", 100, 45, mode="soft")
    page = site.client.get("/dashboard").text
    panel = panel_of(page)
    assert 'data-experiment="hard_vs_soft"' in page
    assert "Experiment hard_vs_soft on support_answer" in panel
    assert "hard (hard, weight 50): 100 sessions" in panel and "soft (soft, weight 50): 100 sessions" in panel
    row = re.search(r'<tr data-metric="loop_follow_rate"><th scope="row">loop_follow_rate</th>(.*?)</tr>', panel)
    assert row is not None
    assert row.group(1) == '<td class="num">30.0% (30/100)</td><td class="num">45.0% (45/100)</td>'
    follow = re.search(r'<tr data-metric="loop_follow_rate" data-arm="soft">(.*?)</tr>', panel)
    assert follow is not None
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", follow.group(1))
    assert cells[0] == "soft" and cells[1] == "+15.0 pt" and cells[2].startswith("[+")
    assert cells[3] == "yes" and cells[4] == "162 (62 more)"
    assert "Sample ratio check: p = 1" in panel
    assert '<p class="experiment-warning" role="note">Peek: the smallest arm has 100 of the 162 sessions planned' in (
        panel
    )


def test_a_sample_ratio_mismatch_shows(site_factory: Callable[..., Site], experiment_config: Path) -> None:
    """Soft got 140 of 200 sessions on a 50/50 split: the check says mismatch, the warning says why."""
    site = site_factory(config=str(experiment_config))
    write_arm(site.backend.store, "hard", 60, 20)
    write_arm(site.backend.store, "soft", 140, 40, mode="soft")
    panel = panel_of(site.client.get("/dashboard").text)
    assert '<p class="experiment-srm mismatch">Sample ratio check: p = ' in panel and ": mismatch</p>" in panel
    assert "Sample ratio mismatch: the sessions per arm (hard 60, soft 140)" in panel


def test_no_panel_without_an_experiment(site_factory: Callable[..., Site], experiment_config: Path) -> None:
    """The sample config has no experiment: no panel; filtered to another workflow: none either."""
    plain = site_factory()
    assert 'class="dashboard-block experiment"' not in plain.client.get("/dashboard").text
    site = site_factory(config=str(experiment_config))
    assert 'class="dashboard-block experiment"' in site.client.get("/dashboard").text
    filtered = site.client.get("/dashboard", params={"workflow": "change_review"}).text
    assert 'class="dashboard-block experiment"' not in filtered
    chosen = site.client.get("/dashboard", params={"workflow": "support_answer"}).text
    assert 'id="experiment-support_answer"' in chosen
