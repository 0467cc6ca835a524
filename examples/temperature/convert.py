"""Temperature conversion: a harder example for lathe (see the README)."""


def celsius_to_fahrenheit(celsius: float) -> float:
    """Degrees Fahrenheit for `celsius` degrees Celsius."""
    return celsius * 9 / 5 - 32
