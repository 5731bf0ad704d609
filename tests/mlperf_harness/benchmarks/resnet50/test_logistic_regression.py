from __future__ import annotations

import numpy as np

from mlperf_harness.benchmarks.resnet50.logistic_regression import (
    fit_softmax_regression,
    softmax_cross_entropy,
)


def test_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(0)
    features = rng.normal(size=(12, 5))
    targets = np.eye(3)[rng.integers(0, 3, size=12)]
    params = rng.normal(size=3 * 5 + 3)
    _, grad = softmax_cross_entropy(params, features, targets, l2=0.1)
    step = 1e-6
    for i in range(len(params)):
        bump = np.zeros_like(params)
        bump[i] = step
        plus, _ = softmax_cross_entropy(params + bump, features, targets, 0.1)
        minus, _ = softmax_cross_entropy(params - bump, features, targets, 0.1)
        assert abs((plus - minus) / (2 * step) - grad[i]) < 1e-5


def test_fits_separable_classes() -> None:
    rng = np.random.default_rng(1)
    centres = np.array([[4.0, 0.0], [-4.0, 0.0], [0.0, 4.0]])
    labels = rng.integers(0, 3, size=150)
    features = centres[labels] + rng.normal(size=(150, 2))
    params = fit_softmax_regression(features, np.eye(3)[labels], l2=1e-3, iterations=100)
    weight, bias = params[:6].reshape(3, 2), params[6:]
    accuracy = np.mean((features @ weight.T + bias).argmax(axis=1) == labels)
    assert accuracy > 0.97
