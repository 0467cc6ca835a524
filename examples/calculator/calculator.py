"""Tax calculator used by lathe's README example and end-to-end test."""


def tax(income: float, rate: float) -> float:
    """Tax owed on `income` at `rate` percent. Negative income is an error."""
    if income < 0:
        return 0.0
    return income * (rate / 10)
