"""The baselines to beat, trained on the same split in the same run: gradient-boosted trees with
native categoricals, and a logistic regression on one-hot categoricals and scaled numerics.

Boosted trees are what tabular deep learning has to beat (on census income about 0.871 accuracy
and 0.927 ROC AUC in seconds on a CPU); the logistic regression (about 0.853 / 0.906) is the
wide half of Wide & Deep alone. Both read the Parquet splits as written (schema from meta.json),
so the report compares the network with them on the very same rows.

On a machine of a few cores the fits run on one OpenMP thread (`openmp_threads`): the boosted
trees' parallel loops meet at a barrier hundreds of times a fit, and where TensorFlow's threads
or another process hold a core, each barrier waits for a thread that is not running. On 2 cores
the census fit took 32 s on two threads and 2.6 s on one (the table smoke chain spent 118 s here).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, average_precision_score, roc_auc_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler
from threadpoolctl import threadpool_limits

LABEL = "__label__"
BOOSTED = "hist_gradient_boosting"
LOGISTIC = "logistic_regression_one_hot"
MAX_NATIVE = 255  # HistGradientBoosting's limit on a native categorical's distinct values
FEW_CORES = 4  # up to this many cores, the baselines fit on one OpenMP thread (see above)


def run_baselines(train: pd.DataFrame, test: pd.DataFrame, meta: dict[str, Any]) -> list[dict]:
    """Fit each baseline on train, score it on test: one dict per model with its name,
    test_accuracy (at 0.5 when binary), roc_auc, pr_auc (None unless binary) and seconds."""
    numeric = [entry["name"] for entry in meta["schema"]["numeric"]]
    categorical = [entry["name"] for entry in meta["schema"]["categorical"]]
    x_train, y_train = train[numeric + categorical], train[LABEL].to_numpy()
    x_test, y_test = test[numeric + categorical], test[LABEL].to_numpy()
    wide = [c for c in categorical if x_train[c].replace("", np.nan).nunique() > MAX_NATIVE]
    results = []
    for name, model in (
        (BOOSTED, boosted_trees(numeric, categorical, wide)),
        (LOGISTIC, logistic_regression(numeric, categorical)),
    ):
        started = time.perf_counter()
        with threadpool_limits(limits=openmp_threads(), user_api="openmp"):
            model.fit(x_train, y_train)
            probabilities = model.predict_proba(x_test)
        seconds = time.perf_counter() - started
        results.append(
            {"name": name, **scores(y_test, probabilities), "seconds": round(seconds, 2)}
        )
    if wide:
        results[0]["note"] = (
            f"Column(s) {', '.join(wide)} hold more than {MAX_NATIVE} distinct values in train, "
            "the boosted trees' limit for a native categorical: they enter the trees as ordinal "
            "codes (split like numbers)."
        )
    return results


def openmp_threads(cores: int | None = None) -> int | None:
    """1 on a machine of FEW_CORES cores or fewer, else None (OpenMP's own choice)."""
    cores = os.cpu_count() if cores is None else cores
    return 1 if (cores or 1) <= FEW_CORES else None


def boosted_trees(numeric: list[str], categorical: list[str], wide: Sequence[str] = ()) -> Pipeline:
    """HistGradientBoostingClassifier's defaults, categoricals ordinal-coded and declared native
    (unknown and missing values become NaN, which the trees route on their own); the `wide` ones,
    over MAX_NATIVE distinct values, stay ordinal codes the trees split as numbers."""
    codes = OrdinalEncoder(
        handle_unknown="use_encoded_value", unknown_value=np.nan, encoded_missing_value=np.nan
    )
    columns = ColumnTransformer(
        [("categories", codes, categorical), ("numbers", "passthrough", numeric)],
        verbose_feature_names_out=False,
    )
    # the transformer puts the categories first, in their order
    positions = [i for i, name in enumerate(categorical) if name not in wide]
    trees = HistGradientBoostingClassifier(categorical_features=positions or None, random_state=0)
    return Pipeline([("columns", columns.set_output(transform="pandas")), ("trees", trees)])


def logistic_regression(numeric: list[str], categorical: list[str]) -> Pipeline:
    """One-hot categoricals (unseen ones all-zero) and median-imputed, standardized numerics."""
    numbers = make_pipeline(SimpleImputer(strategy="median"), StandardScaler())
    columns = ColumnTransformer(
        [
            ("categories", OneHotEncoder(handle_unknown="ignore"), categorical),
            ("numbers", numbers, numeric),
        ]
    )
    return Pipeline([("columns", columns), ("logistic", LogisticRegression(max_iter=1000))])


def scores(labels: np.ndarray, probabilities: np.ndarray) -> dict[str, float | None]:
    """Accuracy at 0.5 (the arg-max when multi-class); ROC AUC and PR AUC of the positive class
    when binary, macro one-vs-rest ROC AUC and no PR AUC when multi-class."""
    predicted = probabilities.argmax(axis=1)
    if probabilities.shape[1] == 2:
        positive = probabilities[:, 1]
        return {
            "test_accuracy": float(accuracy_score(labels, predicted)),
            "roc_auc": float(roc_auc_score(labels, positive)),
            "pr_auc": float(average_precision_score(labels, positive)),
        }
    classes = np.arange(probabilities.shape[1])
    return {
        "test_accuracy": float(accuracy_score(labels, predicted)),
        "roc_auc": float(
            roc_auc_score(labels, probabilities, multi_class="ovr", average="macro", labels=classes)
        ),
        "pr_auc": None,
    }
