"""Each fact of tests/_docs_facts.py is checked on a docs command that runs.

A docs edit that changes a command so no pattern of `FACTS` / `BEFORE`
finds it would leave those checks unmade, silently: this test fails then.
"""

import re

from absl.testing import absltest

from tests import _docs_facts
from tests import test_docs_commands


class DocsFactsTest(absltest.TestCase):

  def test_every_fact_has_exactly_one_command_that_runs(self):
    commands = test_docs_commands._COMMANDS  # pylint: disable=protected-access
    runs = [c for c in commands if not c.skip_reason and not c.is_server]
    for pattern, fact in _docs_facts.FACTS + _docs_facts.BEFORE:
      found = [c.doc for c in runs if re.search(pattern, c.text)]
      self.assertLen(found, 1, f"{fact.__name__}: `{pattern}` finds {found}")


if __name__ == "__main__":
  absltest.main()
