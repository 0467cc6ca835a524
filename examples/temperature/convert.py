"""Temperature conversion, used by lathe's README example."""


def celsius_to_fahrenheit(celsius: float) -> float:
    """Degrees Fahrenheit for `celsius` degrees Celsius."""
    return celsius * 9 / 5 - 32
