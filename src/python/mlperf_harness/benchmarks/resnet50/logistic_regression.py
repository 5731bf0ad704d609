"""Multinomial logistic regression fitted by L-BFGS, written out because only NumPy is at hand
(no SciPy or scikit-learn in the dependencies): fits the stand-in model's classifier head."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Float64Array = npt.NDArray[np.float64]


def softmax_cross_entropy(
    params: Float64Array, features: Float64Array, targets: Float64Array, l2: float
) -> tuple[float, Float64Array]:
    """Mean cross-entropy plus (l2 / 2) |W|^2, and its gradient; params = [W (K x D), b (K)]."""
    count, width = features.shape
    classes = targets.shape[1]
    weight = params[: classes * width].reshape(classes, width)
    bias = params[classes * width :]
    logits = features @ weight.T + bias
    logits -= logits.max(axis=1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    loss = -float(np.sum(targets * log_probs)) / count + 0.5 * l2 * float(np.sum(weight * weight))
    residual = (np.exp(log_probs) - targets) / count
    grad_weight = residual.T @ features + l2 * weight
    return loss, np.concatenate([grad_weight.reshape(-1), residual.sum(axis=0)])


def fit_softmax_regression(
    features: Float64Array, targets: Float64Array, l2: float, iterations: int, memory: int = 10
) -> Float64Array:
    """Minimise the regularised cross-entropy by L-BFGS with a backtracking (Armijo) line search."""
    x = np.zeros(targets.shape[1] * (features.shape[1] + 1))
    loss, grad = softmax_cross_entropy(x, features, targets, l2)
    steps: list[tuple[Float64Array, Float64Array, float]] = []  # (s, y, 1 / y.s)
    for _ in range(iterations):
        if float(np.linalg.norm(grad)) < 1e-7:
            break
        # Two-loop recursion: direction = -H grad, H the L-BFGS inverse-Hessian estimate.
        direction = -grad
        alphas = []
        for s, y, rho in reversed(steps):
            alpha = rho * float(s @ direction)
            direction = direction - alpha * y
            alphas.append(alpha)
        if steps:
            s, y, _ = steps[-1]
            direction = direction * (float(s @ y) / float(y @ y))
        for (s, y, rho), alpha in zip(steps, reversed(alphas), strict=True):
            beta = rho * float(y @ direction)
            direction = direction + (alpha - beta) * s
        slope = float(grad @ direction)
        if slope >= 0:  # not a descent direction: restart from steepest descent
            steps.clear()
            direction, slope = -grad, -float(grad @ grad)
        step = 1.0 if steps else 1.0 / max(float(np.linalg.norm(grad)), 1.0)
        while True:
            candidate = x + step * direction
            new_loss, new_grad = softmax_cross_entropy(candidate, features, targets, l2)
            if new_loss <= loss + 1e-4 * step * slope or step < 1e-12:
                break
            step *= 0.5
        s_new, y_new = candidate - x, new_grad - grad
        if float(s_new @ y_new) > 1e-12:
            steps.append((s_new, y_new, 1.0 / float(s_new @ y_new)))
            del steps[:-memory]
        x, loss, grad = candidate, new_loss, new_grad
    return x
