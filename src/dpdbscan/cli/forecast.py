"""``dpdbscan forecast``: what a release would detect, before any budget is
spent. Reads no data: public options only (bounds, eps, MinPts, epsilon, the
user's guess ``--n-expected``)."""

from __future__ import annotations

import argparse
import json

from ..geometry import projection as _geo
from ..model.codec import jsonable
from ..plan.resolve import forecast_of, validated
from ..spec.validation import check_positive
from .common import EXIT_OK, ArgTarget, _floats, _split_bounds, _Warnings
from .fit import _border_arg, privacy_values
from .options import DEFAULTS

EXAMPLES = """examples:
  # Cabs-tiny as in the paper, expecting about 400,000 trips
  dpdbscan forecast --geo --bounds -122.48 37.72 -122.38 37.82 --eps 50m --min-samples 1000 \\
      --n-expected 4e5

  # 3-D data in [0, 10]^3, 20,000 points expected, at epsilon 0.5
  dpdbscan forecast --bounds 0 10 --dims 3 --eps 0.5 --min-samples 20 --epsilon 0.5 \\
      --n-expected 20000
"""


def add_arguments(p: ArgTarget) -> None:
    p.add_argument(
        "--bounds",
        nargs="+",
        required=True,
        metavar="B",
        help="public bounds: lower_1 .. lower_d upper_1 .. upper_d, or one lower and "
        "one upper with --dims; with --geo: lon_min lat_min lon_max lat_max",
    )
    p.add_argument(
        "--dims",
        type=int,
        default=None,
        help="number of dimensions when --bounds gives one lower and one upper value",
    )
    p.add_argument("--geo", action="store_true", help="bounds are lon/lat degrees; eps a length")
    p.add_argument("--ref-lat", type=float, default=None, help="see 'dpdbscan fit --help'")
    p.add_argument(
        "--eps",
        "--alpha",
        required=True,
        metavar="ALPHA",
        help="radius (with --geo a length such as 50m), or 'auto' for the automatic mode's base release",
    )
    p.add_argument("--min-samples", "--minpts", required=True, metavar="MINPTS", help="MinPts, or 'auto'")
    p.add_argument("--epsilon", type=float, default=DEFAULTS["epsilon"], help="privacy budget (default 1)")
    p.add_argument(
        "--n-expected",
        type=float,
        default=None,
        metavar="N",
        help="your own public guess of the number of points (never measured)",
    )
    p.add_argument("--eta", type=float, default=DEFAULTS["eta"])
    p.add_argument("--beta", type=float, default=DEFAULTS["beta"])
    p.add_argument("--delta", type=float, default=DEFAULTS["delta"])
    p.add_argument("--histogram", default=DEFAULTS["histogram"])
    p.add_argument("--noise", default=DEFAULTS["noise"])
    p.add_argument("--theta", type=float, default=None)
    p.add_argument("--subcells", default=DEFAULTS["subcells"])
    p.add_argument("--core", default=DEFAULTS["core"])
    p.add_argument("--margin", default=DEFAULTS["margin"])
    p.add_argument("--border", default=DEFAULTS["border"])
    p.add_argument(
        "--max-cells",
        type=int,
        default=DEFAULTS["max_cells"],
        help="automatic mode: public cap on the cells of its release",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _number_or_text(text):
    for convert in (int, float):
        try:
            return convert(text)
        except (TypeError, ValueError):
            pass
    return text


def cmd_forecast(args: argparse.Namespace, sink: _Warnings) -> int:
    geo = bool(args.geo)
    eps = args.eps if str(args.eps).lower() == "auto" else _geo.parse_length(args.eps, geo=geo)
    values = dict(
        eps=eps,
        min_samples=_number_or_text(args.min_samples),
        **privacy_values(args),
        subcells=_number_or_text(args.subcells),
        margin=_number_or_text(args.margin),
        core=args.core,
        border=_border_arg(args.border, geo=geo),
        max_cells=args.max_cells,
    )
    p = validated(values, cli=True)
    n = None if args.n_expected is None else check_positive("--n-expected", args.n_expected)
    raw = _floats(args.bounds, "--bounds")
    if geo:
        d = 2
    elif args.dims is not None:
        d = args.dims
    elif len(raw) % 2 == 0 and len(raw) > 2:
        d = len(raw) // 2
    else:
        raise ValueError("--bounds with one lower and one upper value needs --dims D")
    lower, upper = _split_bounds(raw, d, geo)
    if geo:
        proj = _geo.Equirectangular.from_bounds(lower, upper, args.ref_lat)
        lower, upper = proj.project_bounds(lower, upper)
    fc = forecast_of(p, lower, upper, n_expected=n)
    if args.json:
        print(json.dumps(jsonable(fc.to_dict()), indent=2, allow_nan=False))
        return EXIT_OK
    length = _geo.format_km if geo else (lambda v: f"{v:g}")
    print(
        f"forecast for eps={length(fc.eps)}, min_samples={fc.min_samples:g}, "
        f"epsilon={fc.epsilon:g} (public inputs only; nothing is read or spent)"
    )
    for line in fc.lines():
        print(line)
    return EXIT_OK
