"""Figures for the benchmarks that compare paired windows (one with a
load switched on, one without, side by side in time): the median of the
pairs' ratios and of their sums, each with a 95% bootstrap interval."""
import random
import statistics


def median_ci(xs, rounds=4000, seed=14):
    """The median of xs and a 95% bootstrap interval of it."""
    rnd = random.Random(seed)
    meds = sorted(statistics.median(rnd.choice(xs) for _ in xs)
                  for _ in range(rounds))
    return (statistics.median(xs), meds[int(0.025 * rounds)],
            meds[int(0.975 * rounds) - 1])


def ratio_ci(pairs, rounds=4000, seed=14):
    """pairs of (off, on) windows whose [1] is a rate: all on windows'
    rates over all off ones, as a change in %, and a 95% bootstrap
    interval of it (pairs resampled)."""
    def ratio(ps):
        return 100.0 * (sum(on[1] for _, on in ps) /
                        sum(off[1] for off, _ in ps) - 1)
    rnd = random.Random(seed)
    rs = sorted(ratio([rnd.choice(pairs) for _ in pairs])
                for _ in range(rounds))
    return ratio(pairs), rs[int(0.025 * rounds)], rs[int(0.975 * rounds) - 1]


# which windows are loaded: both orders of a pair in turn, so that a
# drift over the run falls on both kinds alike
PATTERN = (False, True, True, False)


def pair_windows(wins, skip=4, short=None):
    """Windows (loaded, rate, ..., seconds) in the order PATTERN gave
    them, the first skip left out (a client's start): the neighbouring
    pairs, each as (unloaded, loaded); a pair with a window shorter than
    short seconds (the last, cut by the client's end) left out."""
    run = wins[skip:]
    return [(a, b) if not a[0] else (b, a)
            for a, b in zip(run[0::2], run[1::2])
            if a[0] != b[0] and (short is None or
                                 min(a[-1], b[-1]) >= short)]
