"""A loop with a tensor-dependent exit (`break` on a tensor condition),
as in AutoGraph's examples: Newton's iteration for square roots, stopping
when the largest update is small. The `for` loop over `range(40)` ends
its body with the `break`, so `@jitc.function` stages it as one
`scf.while` (AutoGraph's staged loop) that stops on the break or after 40
iterations: inputs that need another trip count than the profiled ones
(the larger scale) are served by the same graph, with no fallback.
Checked against the same function run imperatively (`square_root.__wrapped__`
on the lazy graph), and against NumPy.

Run: .venv/bin/python examples/python/autograph_while.py
"""

import numpy as np

import jitc


@jitc.function
def square_root(a, tolerance=1e-4):
    x = a
    for _ in range(40):
        update = 0.5 * (x + a / x) - x
        x = x + update
        if jitc.max(abs(update)) < tolerance:
            break
    return x


def main(calls=12):
    """The largest difference from the imperative run, and the largest
    error relative to NumPy's square root."""
    rng = np.random.default_rng(2)
    worst, error = 0.0, 0.0
    for k in range(calls):
        scale = 4.0 if k < 8 else 400.0  # a larger scale needs more iterations
        a = (rng.random(16, dtype=np.float32) + 1.0) * np.float32(scale)
        got = square_root(a).numpy()
        imperative = square_root.__wrapped__(jitc.Var(a)).numpy()
        worst = max(worst, float(np.abs(got - imperative).max()))
        error = max(error, float(np.abs(got - np.sqrt(a)).max() / np.sqrt(scale)))
    print(f"largest difference from the imperative run: {worst:.2e}")
    print(f"largest relative error against NumPy: {error:.2e}")
    print(square_root.explain())
    return worst, error


if __name__ == "__main__":
    main()
