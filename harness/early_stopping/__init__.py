"""Early stopping: hooks that end training when an eval metric stops improving.

As tf.estimator.experimental's early-stopping functions (2.15)::

    hook = early_stopping.stop_if_no_decrease_hook(
        estimator, "loss", max_steps_without_decrease=1000,
        run_every_secs=None, run_every_steps=100)
    train_spec = harness.TrainSpec(train_input_fn, hooks=[hook])

The chief evaluates the predicate (which reads the eval event files). When
several worker processes train, it tells the others through a variable
(`signal_early_stopping/STOP`); a collective multi-worker strategy sums that
variable across workers instead. An in-process MirroredStrategy needs no
signalling (2.15 wrongly took the multi-worker path for any strategy).
When the chief stops early it also writes `<model_dir>/training_stopped`
(`write_training_stopped_marker`), which an evaluator process polls
(`read_training_stopped_marker`) to know that no more checkpoints will come.
"""

# pylint: disable=unused-import
from harness.early_stopping.predicates import make_early_stopping_hook
from harness.early_stopping.predicates import read_eval_metrics
from harness.early_stopping.predicates import read_training_stopped_marker
from harness.early_stopping.predicates import stop_if_higher_hook
from harness.early_stopping.predicates import stop_if_lower_hook
from harness.early_stopping.predicates import stop_if_no_decrease_hook
from harness.early_stopping.predicates import stop_if_no_increase_hook
from harness.early_stopping.predicates import write_training_stopped_marker
from harness.early_stopping.stop_hooks import CheckForStoppingHook
from harness.early_stopping.stop_hooks import StopOnPredicateHook
from harness.state.run_state import MARKER_NAME as TRAINING_STOPPED_MARKER

# tf.estimator 2.15's private names, which legacy code calls.
_CheckForStoppingHook = CheckForStoppingHook
_StopOnPredicateHook = StopOnPredicateHook

__all__ = [
    "make_early_stopping_hook", "stop_if_higher_hook", "stop_if_lower_hook",
    "stop_if_no_increase_hook", "stop_if_no_decrease_hook",
    "read_eval_metrics", "write_training_stopped_marker",
    "read_training_stopped_marker", "TRAINING_STOPPED_MARKER",
]
