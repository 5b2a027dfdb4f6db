"""Exercise 6.1: accumulate the gradient of a value used more than once."""

from __future__ import annotations

import numpy as np

from ...checking import mistakes
from ...checking.numpy_rule import NumpyRule
from ...checking.numpy_rule import read_array
from ...checking.spec import Exercise
from ...checking.spec import Mistake
from ...checking.verdicts import Wrong
from .reverse_pass import GRAPHS
from .reverse_pass import draw
from .reverse_pass import reverse_pass

mistakes.register(  # the codes of what the reverse pass finds as it calls the answer
    {
        "not_stored": "the first contribution was not stored in grads",
        "returned_new_dict": "a new dictionary returned instead of updating grads",
        "stored_none": "None stored as a gradient",
        "returned_not_stored": "the sum returned, the stored gradient left as it was",
    }
)


STORED_IN_PLACE = (
    "Your function changed the array stored in grads[{key!r}] in place (`+=`, `*=`, out=...). "
    "That array is an earlier contribution, and the tape still holds it: the same upstream "
    "array may be handed to several inputs, so changing it changes them all. Build a new "
    "array instead: grads[key] = grads[key] + contribution."
)


def _drive(call, p):
    def accumulate(grads, key, contribution):  # each call checked as it happens
        stored = grads.get(key)
        kept = np.array(stored, copy=True) if isinstance(stored, np.ndarray) else None
        try:
            returned = call(grads, key, contribution)
        except Wrong as wrong:
            if wrong.mistake == "changed_in_place" and kept is not None:
                if not np.array_equal(stored, kept, equal_nan=True):  # the stored entry
                    raise Wrong(STORED_IN_PLACE.format(key=key), "changed_in_place") from None
            raise
        if key not in grads:
            raise Wrong(
                "Your function returned a dictionary but left `grads` without the new entry: "
                "update the dictionary it receives, grads[key] = ... (it returns nothing)."
                if isinstance(returned, dict)
                else f"After your function ran, `grads` had no entry for {key!r}, the key it "
                "was given: store the first contribution, grads[key] = contribution.",
                "returned_new_dict" if isinstance(returned, dict) else "not_stored",
            )
        if grads[key] is None:
            raise Wrong("Your function stored None in `grads`, not a gradient.", "stored_none")
        if kept is not None and returned is not None and grads[key] is stored:
            summed = np.asarray(kept) + np.asarray(contribution)
            if np.shape(returned) == summed.shape and np.allclose(returned, summed):
                raise Wrong(
                    "Your function returns the sum, grads[key] + contribution, but leaves "
                    "grads[key] as it was: the reverse pass reads what is stored, not what is "
                    "returned. Store the sum, grads[key] = grads[key] + contribution (the "
                    "function returns nothing).",
                    "returned_not_stored",
                )
        read_array(grads[key], f"The gradient stored for {key!r}", np.shape(p.x), p.dtype)

    return reverse_pass(p, accumulate)


def _later(update):
    return lambda old, new: new if old is None else update(old, new)


SLIPS = {  # what the gradient of x then is, the slip as update(old or None, new), its meaning
    "overwrote_gradient": (
        "is only its last contribution: each replaced the one before. A value used several "
        "times gets the sum over its uses: add each contribution to what is stored.",
        lambda old, new: new,
        "a later contribution replaced the stored gradient",
    ),
    "kept_first_gradient": (
        "is only its first contribution: the later ones were dropped. Add each to it.",
        _later(lambda old, new: old),
        "only the first contribution was kept",
    ),
    "contribution_ignored": (
        "doubles what was stored (grads[key] + grads[key]): add the new contribution instead.",
        _later(lambda old, new: old + old),
        "the new contribution does not change the stored gradient",
    ),
    "multiplied_gradients": (
        "is the product of its contributions: the chain rule adds them, one term per use.",
        _later(lambda old, new: old * new),
        "contributions multiplied instead of added",
    ),
    "added_twice": (
        "counts the first contribution twice: store it as it is, then add each later one once.",
        lambda old, new: (new if old is None else old) + new,
        "a contribution added twice",
    ),
    "subtracted_gradient": (
        "subtracts the later contributions: they are added, whatever their sign.",
        _later(lambda old, new: old - new),
        "later contributions subtracted instead of added",
    ),
    "averaged_gradients": (
        "averages the contributions: they add up, and three uses get all three, not their mean.",
        _later(lambda old, new: (old + new) / 2),
        "contributions averaged instead of added",
    ),
}


def _slip(code, hint, update, means):
    def accumulate(grads, key, contribution):
        grads[key] = update(grads.get(key), contribution)

    def gives(p):
        return reverse_pass(p, accumulate, "float64")["x"]

    return Mistake(code, f"Your gradient of 'x' {hint}", gives, means=means)


EXERCISE = Exercise(
    number="6.1",
    title="Accumulate, don't overwrite",
    stars=2,
    minutes=10,
    harness=NumpyRule(
        "`accumulate_gradient`",
        inputs=("grads", "key", "contribution"),
        drive=_drive,
        main="x",
        fix="build a new array instead: grads[key] = grads[key] + contribution",
        nouns={"x": "your gradient of 'x'", "y": "your gradient of 'y'"},
    ),
    probes=draw,
    reference=lambda p: GRAPHS[p.label][1](p.x, p.y, p.upstream),
    mistakes=tuple(_slip(code, *slip) for code, slip in SLIPS.items()),
    describe={leaf: f"the sum of the contributions of every use of {leaf}" for leaf in "xy"},
    claim="Each contribution was added to what was stored, and no array was changed in place, "
    "over five graphs (a value used two and three times, one upstream array handed to two "
    "inputs, two inputs sharing a graph), every gradient compared",
)
accumulate_gradient = EXERCISE.check
