import pytest

from calculator import tax


def test_tax_is_a_percentage_of_income():
    assert tax(1000, 20) == pytest.approx(200)


def test_negative_income_is_rejected():
    with pytest.raises(ValueError):
        tax(-5, 20)
