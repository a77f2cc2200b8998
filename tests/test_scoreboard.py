"""The reproduction scoreboard (`runs.scoreboard`, `zoo scoreboard`): each verdict follows the
stated rule from the committed data, and the committed pages are as the data make them."""

from pathlib import Path

import pytest

from runs import Claim, Experiment
from runs.cli import main
from runs.scoreboard import Verdict, experiment_claims, pages, score

ROOT = Path(__file__).parents[1]


def _figures(tmp_path: Path) -> Path:
    figures = tmp_path / "figures"
    (figures / "sweep").mkdir(parents=True)
    (figures / "sweep" / "summary.csv").write_text(
        "label,model,metric,mean,std,n,paper\n"
        "a,x,test.accuracy,0.80,0.01,3,0.81\n"
        "b,y,test.accuracy,0.60,0.02,3,0.9\n"
        "c,z,test.accuracy,0.61,0.20,3,\n"
    )
    (figures / "sweep" / "curves.csv").write_text(
        "label,seed,frames,updates,eval.success\n"
        "a,0,100,1,0.5\na,1,100,1,0.7\na,0,200,2,0.9\nb,0,100,1,0.1\nb,1,100,1,0.2\n"
    )
    (figures / "sweep" / "figure.png").write_bytes(b"png")
    (figures / "flat-summary.csv").write_text(
        "label,metric,mean,std,n,paper\na,ood.loss,1.5,0.1,2,\n"
    )
    return figures


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        # within max(2 std, tolerance) of the paper's value
        (Claim("a", "sweep", "a", "test.accuracy", paper=0.81), Verdict.REPRODUCED),
        (Claim("a", "sweep", "a", "test.accuracy", paper=0.85), Verdict.NOT_REPRODUCED),
        (Claim("a", "sweep", "a", "test.accuracy", paper=0.85, tolerance=0.05), Verdict.REPRODUCED),
        # both sides near the paper's values
        (
            Claim("a>b", "sweep", "a", "test.accuracy", paper=0.8, than="b", paper_than=0.6),
            Verdict.REPRODUCED,
        ),
        # the paper's sign, beyond twice the standard error, values far from the paper's
        (
            Claim("a>b", "sweep", "a", "test.accuracy", paper=0.95, than="b", paper_than=0.3),
            Verdict.DIRECTION,
        ),
        (Claim("a>b", "sweep", "a", "test.accuracy", than="b"), Verdict.DIRECTION),
        (
            Claim("a<b", "sweep", "a", "test.accuracy", than="b", higher=False),
            Verdict.NOT_REPRODUCED,
        ),
        # the paper's values tie: a difference within noise reproduces the tie, a clear one not
        (
            Claim("c=b", "sweep", "c", "test.accuracy", paper=0.9, than="b", paper_than=0.9),
            Verdict.DIRECTION,
        ),
        (
            Claim("a=b", "sweep", "a", "test.accuracy", paper=0.9, than="b", paper_than=0.9),
            Verdict.NOT_REPRODUCED,
        ),
        # the sign agrees but the difference is within noise (c's std is large)
        (Claim("c>b", "sweep", "c", "test.accuracy", than="b"), Verdict.NOT_REPRODUCED),
        # on the curve, per seed: a 0.6 +- 0.141 against b 0.15 +- 0.071 at 100 frames
        (Claim("a>b", "sweep", "a", "eval.success", than="b", at=100), Verdict.DIRECTION),
        (Claim("a>b", "sweep", "a", "eval.success", than="b", at=200), Verdict.NOT_RUN),
        (Claim("flat", "flat", "a", "ood.loss", paper=1.4), Verdict.REPRODUCED),
        (Claim("missing", "sweep", "maml", "test.accuracy", paper=0.5), Verdict.NOT_RUN),
        (Claim("missing", "nowhere", "a", "test.accuracy", paper=0.5), Verdict.NOT_RUN),
    ],
)
def test_each_verdict_follows_the_stated_rule(tmp_path, claim, verdict):
    row = score(claim, _figures(tmp_path))
    assert row.verdict is verdict, row.note


def test_a_comparison_reports_both_sides_and_the_difference(tmp_path):
    row = score(Claim("c>b", "sweep", "c", "test.accuracy", than="b"), _figures(tmp_path))
    assert row.ours is not None and row.ours_than is not None
    assert (row.ours.mean, row.ours_than.mean, row.ours.n) == (0.61, 0.60, 3)
    assert "the sign agrees, within noise" in row.note
    assert row.figure == tmp_path / "figures" / "sweep" / "figure.png"


def test_a_claim_without_a_paper_value_or_comparison_is_refused():
    with pytest.raises(ValueError, match="neither a paper value nor a comparison"):
        Claim("x", "sweep", "a", "test.accuracy")
    with pytest.raises(ValueError, match="paper_than but no `than`"):
        Claim("x", "sweep", "a", "test.accuracy", paper=0.5, paper_than=0.4)
    with pytest.raises(TypeError, match=r"runs\.Claim"):
        Experiment(claims=("a > b",))  # type: ignore[arg-type]


def test_pages_fill_the_markers_and_keep_the_rest(tmp_path):
    figures = _figures(tmp_path)
    docs = tmp_path / "docs"
    (docs / "papers").mkdir(parents=True)
    (docs / "papers" / "p.md").write_text(
        "# P\n\nintro\n\n<!-- scoreboard:start -->\nold\n<!-- scoreboard:end -->\n\n## Runs\n"
    )
    (docs / "index.md").write_text(
        "# Home\n<!-- scoreboard:summary:start -->\n<!-- scoreboard:summary:end -->\nend\n"
    )
    claims = {
        "p": (
            "P et al.",
            (
                Claim("a>b", "sweep", "a", "test.accuracy", than="b", sweep="s"),
                Claim("maml", "sweep", "maml", "test.accuracy", paper=0.9),
            ),
        )
    }
    out = pages(claims, figures, docs)
    page = out[docs / "papers" / "p.md"]
    assert page.startswith("# P\n\nintro\n\n<!-- scoreboard:start -->\n")
    assert page.endswith("<!-- scoreboard:end -->\n\n## Runs\n")
    assert "old" not in page
    assert "direction reproduced" in page and "not run yet" in page
    assert "[figure](../../figures/sweep/figure.png)" in page
    assert "- **C1**: `zoo sweep p/s --out results/s && zoo report results/s`" in page
    home = out[docs / "index.md"]
    assert "| [P et al.](papers/p.md) | 0 | 1 | 0 | 1 |" in home and home.endswith("end\n")
    assert "## P et al." in out[docs / "scoreboard.md"]
    (docs / "papers" / "p.md").write_text("# P\nno markers\n")
    with pytest.raises(ValueError, match="lacks the markers"):
        pages(claims, figures, docs)


def test_every_experiment_states_its_claims_and_misses_are_listed():
    claims = experiment_claims()
    assert set(claims) >= {"schug2024", "lake2019", "madan2021"}
    for name, (paper, found) in claims.items():
        assert paper, name
        assert len(found) >= 5, name


def test_the_committed_scoreboard_pages_are_as_the_committed_data_make_them(capsys):
    """`zoo scoreboard --check` regenerates the pages from docs/figures and the experiments'
    claims; a page that differs (a claim or an export changed without `zoo scoreboard`) fails."""
    code = main(
        [
            "scoreboard",
            "--check",
            "--figures",
            str(ROOT / "docs/figures"),
            "--docs",
            str(ROOT / "docs"),
        ]
    )
    assert code == 0, capsys.readouterr().out[-3000:]
    wanted = pages(experiment_claims(), ROOT / "docs/figures", ROOT / "docs")
    assert ROOT / "docs" / "scoreboard.md" in wanted


def test_check_fails_on_a_stale_page_and_writing_fixes_it(tmp_path, capsys):
    figures = ROOT / "docs" / "figures"
    docs = tmp_path / "docs"
    (docs / "papers").mkdir(parents=True)
    for name in experiment_claims():
        (docs / "papers" / f"{name}.md").write_text(
            f"# {name}\n<!-- scoreboard:start -->\n<!-- scoreboard:end -->\n"
        )
    args = ["scoreboard", "--figures", str(figures), "--docs", str(docs)]
    assert main([*args, "--check"]) == 1
    assert "differ from the committed data" in capsys.readouterr().err
    assert main(args) == 0
    assert main([*args, "--check"]) == 0
    assert (docs / "scoreboard.md").read_text().startswith("# Scoreboard")
