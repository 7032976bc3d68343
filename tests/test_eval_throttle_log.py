"""Local train_and_evaluate's throttle line says what happens to a checkpoint.

A checkpoint saved within throttle_secs of the last evaluation is not
evaluated then; the final one (at max_steps) is evaluated at once by the
listener's end(), so no "not evaluated" line may precede that evaluation.
"""

from absl.testing import absltest

from harness.distribute import save_listener


class _FakeEvaluator:

  def __init__(self, max_training_steps):
    self.max_training_steps = max_training_steps
    self.evaluated = 0

  def evaluate_and_export(self):
    self.evaluated += 1
    return {"loss": 1.0}, []


class ThrottleLogTest(absltest.TestCase):

  def _listener(self, max_steps):
    now = [0.0]
    fake = _FakeEvaluator(max_steps)
    listener = save_listener.NewCheckpointListener(fake, 600,
                                                   clock=lambda: now[0])
    listener.after_save(None, 0)  # The save at session start.
    listener.after_save(None, 100)  # First evaluation.
    now[0] = 10.0
    return listener, fake

  def test_final_checkpoint_has_no_not_evaluated_line(self):
    listener, fake = self._listener(max_steps=200)
    with self.assertNoLogs("absl", level="INFO"):
      listener.after_save(None, 200)
    listener.end(None, 200)
    self.assertEqual(fake.evaluated, 2)

  def test_throttled_checkpoint_line_says_not_evaluated_and_why(self):
    listener, fake = self._listener(max_steps=1000)
    with self.assertLogs("absl", level="INFO") as logs:
      listener.after_save(None, 200)
    self.assertEqual(fake.evaluated, 1)
    self.assertEqual(
        logs.output, ["INFO:absl:eval | checkpoint at step 200 not evaluated:"
                      " 10 s since the last evaluation (throttle_secs=600)"])


if __name__ == "__main__":
  absltest.main()
