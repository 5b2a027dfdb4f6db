"""Reference implementations that later teaching cells reuse (lessons 03 to 06).

When a section after an exercise needs that exercise's answer (lesson 03's plots
need a stable log1pexp, for instance), the lesson imports it from here instead of
defining it in a visible cell, so a learner scrolling down does not read the
answer before trying. One module per lesson, ``lessonNN.py``; each function's
docstring names the exercise whose answer it is. The checks never use these:
they compare with independent float64 references.
"""
