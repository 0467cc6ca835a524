from stats import mean


def test_mean_of_numbers():
    assert mean([1, 2, 3, 6]) == 3


def test_mean_of_nothing_is_zero():
    assert mean([]) == 0.0
