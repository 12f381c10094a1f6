"""``make demo`` (``python -m dpdbscan.demo``) writes the release and only the release."""

from __future__ import annotations

from dpdbscan import demo
from dpdbscan.render import plotting


def test_demo_writes_only_the_release(tmp_path, capsys, monkeypatch):
    """Issue 19, finding 6: the demo's spans.png, listed in the README among
    the release's files, drew all 6,000 raw points, and the demo printed the
    exact number of training points in each span on standard output. Now the
    picture shows the spans over the noisy histogram only, and the counts are
    a private note on standard error."""
    drawn = []
    plot_spans = plotting.plot_spans

    def spy(model, *args, **kwargs):
        drawn.append(kwargs.get("points", args[2] if len(args) > 2 else None) is not None)
        return plot_spans(model, *args, **kwargs)

    monkeypatch.setattr(plotting, "plot_spans", spy)
    assert demo.main(["--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert drawn == [False]  # one picture, without points
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spans.geojson", "spans.json", "spans.png"]
    assert "span sizes" not in out and "noise:" not in out
    assert "[private: do not publish] span sizes of the demo points" in err
