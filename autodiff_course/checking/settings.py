"""The global settings an answer must leave alone, and putting them back (lesson 00 on).

A learner's function runs inside the notebook's kernel, so a change it makes to a global
setting outlives the check and changes every later cell: NumPy's error handling
(``np.seterr``) or print options, a random seed (``np.random.seed``, ``random.seed``,
``tf.random.set_seed``, ``keras.utils.set_random_seed``), Keras's default float type
(``set_floatx``) or mixed-precision policy (``keras.mixed_precision.set_global_policy``,
lesson 07), or ``tf.config.run_functions_eagerly``. :func:`kept` notes them
before the answer runs, puts back whatever changed, and says what it was.
"""

from __future__ import annotations

import contextlib
import random
import sys

import numpy as np

SEEDERS = (
    (np.random, "seed", "np.random.seed"),
    (random, "seed", "random.seed"),
)


def _tensorflow():
    return sys.modules.get("tensorflow")


def _keras_setting(read):
    keras = sys.modules.get("keras")
    try:
        return read(keras) if keras is not None else None
    except Exception:  # noqa: BLE001 - an old or partial Keras: nothing to guard
        return None


def _keras_floatx():
    return _keras_setting(lambda keras: keras.config.floatx())


def _keras_policy():
    return _keras_setting(lambda keras: keras.mixed_precision.global_policy().name)


def _eager_functions():
    tf = _tensorflow()
    return tf.config.functions_run_eagerly() if tf is not None else None


@contextlib.contextmanager
def kept(changed: list):
    """Run the block; afterwards ``changed`` lists, in words, every global setting the
    block changed (each is put back as it was)."""
    errors, printing = np.geterr(), np.get_printoptions()
    numpy_state, python_state = np.random.get_state(), random.getstate()
    floatx, policy, eager = _keras_floatx(), _keras_policy(), _eager_functions()
    seeded: list = []
    originals = []
    tf = _tensorflow()
    seeders = list(SEEDERS)
    if tf is not None:
        seeders.append((tf.random, "set_seed", "tf.random.set_seed"))
        keras = sys.modules.get("keras")
        if keras is not None and hasattr(keras, "utils"):
            seeders.append((keras.utils, "set_random_seed", "keras.utils.set_random_seed"))
    for owner, name, label in seeders:
        original = getattr(owner, name, None)
        if original is None:
            continue
        originals.append((owner, name, original))

        def seeding(*args, _original=original, _label=label, **kwargs):
            seeded.append(_label)
            return _original(*args, **kwargs)

        setattr(owner, name, seeding)
    try:
        yield
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)
        if np.geterr() != errors:
            np.seterr(**errors)
            changed.append("NumPy's error handling (np.seterr)")
        if np.get_printoptions() != printing:
            np.set_printoptions(**printing)
            changed.append("NumPy's print options (np.set_printoptions)")
        if seeded:
            np.random.set_state(numpy_state)
            random.setstate(python_state)
            changed.append(f"a random seed ({', '.join(dict.fromkeys(seeded))})")
        if floatx is not None and _keras_floatx() != floatx:
            sys.modules["keras"].config.set_floatx(floatx)
            changed.append("Keras's default float type (set_floatx)")
        if policy is not None and _keras_policy() != policy:
            sys.modules["keras"].mixed_precision.set_global_policy(policy)
            changed.append("Keras's mixed-precision policy (set_global_policy)")
        if eager is not None and _eager_functions() != eager:
            _tensorflow().config.run_functions_eagerly(eager)
            changed.append("tf.config.run_functions_eagerly")


def changed_hint(label: str, changed: list) -> str:
    return (
        f"{label} changed {' and '.join(changed)}, a setting of the whole kernel: every "
        "later cell would run with it. The check put it back. A function must leave global "
        "settings alone (for a local change of NumPy's error handling, use `with "
        "np.errstate(...):`; seed a generator of your own, np.random.default_rng(seed))."
    )
