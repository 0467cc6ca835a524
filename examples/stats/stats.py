"""Statistics helpers, used by lathe's README example."""


def mean(values: list[float]) -> float:
    """The arithmetic mean of `values`; 0.0 when there are none."""
    return sum(values) / len(values)
