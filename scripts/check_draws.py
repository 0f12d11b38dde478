#!/usr/bin/env python3
"""Opens draws exported by `atmc-lab run --draws DIR` with xarray and ArviZ, and compares
ArviZ's R-hat, bulk and tail ESS and nested R-hat with the numbers atmc-lab wrote beside
them (root attribute `atmc_lab_diagnostics`, computed on exactly these draws).

Usage: check_draws.py DIR [--tolerance 0.01]. Exit status 0 when every number agrees within
the relative tolerance, 1 otherwise (each comparison printed).

Methods compared: ArviZ's `rhat(method="rank")` is the larger of bulk and tail split
rank-normalised R-hat, as atmc-lab's `split_rhat`; `ess(method="bulk")` and
`ess(method="tail", prob=(0.05, 0.95))` as atmc-lab's (ArviZ 1.x's default tail
probabilities follow its credible-interval setting, 0.89, not the paper's 5 % and 95 %); `rhat_nested(method="identity")` is the formula of
Margossian et al. (2024) on the raw draws, as atmc-lab's `nested_rhat` (ArviZ's default
`method="rank"` splits, rank-normalises and folds first: a different number by design).
"""

import argparse
import json
import sys

import arviz_stats as azs
import numpy as np
import xarray as xr


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("--tolerance", type=float, default=0.01)
    args = parser.parse_args()

    tree = xr.open_datatree(args.store, engine="zarr", consolidated=True)
    attrs = tree.attrs
    ours = attrs["atmc_lab_diagnostics"]
    if isinstance(ours, str):
        ours = json.loads(ours)
    posterior = tree["posterior"]
    theta = posterior["theta"]
    assert theta.dims == ("chain", "draw", "theta_dim_0"), theta.dims
    for group in ("posterior", "sample_stats", "constant_data"):
        assert group in tree.children, f"group {group} missing"
    assert "preset" in attrs and attrs["preset"].strip(), "the preset is missing"
    stats = tree["sample_stats"]
    for name in ("diverging", "step_size", "kinetic_heat", "momentum", "thermostat", "step"):
        assert name in stats, f"sample_stats.{name} missing"

    theirs = {
        "rhat": azs.rhat(tree, method="rank")["theta"].values,
        "ess_bulk": azs.ess(tree, method="bulk")["theta"].values,
        # Vehtari et al.'s 5 % and 95 % quantiles (ArviZ 1.x's default is its CI probability).
        "ess_tail": azs.ess(tree, method="tail", prob=(0.05, 0.95))["theta"].values,
    }
    if attrs.get("superchains"):
        ids = tree["constant_data"]["superchain"].values.astype(int)
        theirs["rhat_nested"] = azs.rhat_nested(
            tree, method="identity", superchain_ids=ids
        )["theta"].values
    failures = 0
    for name, values in theirs.items():
        for c, (a, b) in enumerate(zip(np.atleast_1d(values), ours[name])):
            if b is None:
                ok = not np.isfinite(a)
                rel = float("nan")
            else:
                rel = abs(a - b) / abs(a)
                ok = rel <= args.tolerance
            failures += not ok
            print(
                f"{name}[theta {c + 1}]: ArviZ {a:.6g}, atmc-lab {b if b is None else f'{b:.6g}'}, "
                f"relative difference {rel:.2e} {'ok' if ok else 'DIFFERS'}"
            )
    print(
        f"{theta.sizes['chain']} chains x {theta.sizes['draw']} draws; "
        f"{'all agree' if failures == 0 else f'{failures} differ'}"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
