#!/usr/bin/env python3
"""Ask Headroom before loading: load every model at once when the job fits in memory now,
one stage at a time when it does not (headroom-memory's `fits`).

Usage: fits_or_stage.py [--need BYTES | --key KEY] [--models N] [--mib MIB]

The "models" are N blocks of MIB MiB (default 3 of 100). Eager keeps them all for the whole
run; staged holds one at a time, each stage marked (`stage`), so a guard's verdict shows
them. `fits()` without --need or --key asks about this job's key (`$HEADROOM_KEY` under
`headroom guard`); with no past run of it the plan is staged. Prints `plan: eager` or
`plan: staged` with the answer's basis. Needs `pip install headroom-memory`.
"""

import argparse
import time

from headroom_memory import fits, stage

MIB = 1 << 20


def load(mib: int) -> bytearray:
    """One model: `mib` MiB, every page written."""
    return bytearray(b"\x01") * (mib * MIB)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--need", type=int, help="bytes the job needs (else its history)")
    parser.add_argument("--key", help="the history key to ask about")
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--mib", type=int, default=100)
    args = parser.parse_args()
    answer = fits(key=args.key, need=args.need)
    if answer is None:
        print("plan: staged (no past run to predict from)")
    elif answer.fits:
        print(f"plan: eager ({answer.basis}; {answer.room_bytes / 2**30:.1f} GiB room)")
    else:
        short = answer.short_by_bytes / 2**30
        print(f"plan: staged ({answer.basis}; short by {short:.1f} GiB)")
    eager = answer is not None and answer.fits
    models = [load(args.mib) for _ in range(args.models)] if eager else []
    for n in range(args.models):
        with stage(f"model-{n}"):
            model = models[n] if eager else load(args.mib)
            time.sleep(0.1)  # the model's work
            del model
    print("done", flush=True)


if __name__ == "__main__":
    main()
