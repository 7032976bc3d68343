"""The in-repo copies of the Kubernetes CRDs the k8s tests read.

    python -m tests._crd_copies <upstream crds folder>   # rewrites them

tests/data/k8s/crds/ holds the nine CustomResourceDefinitions that
tests/k8s_admission.py, tests/test_k8s_jobset.py and
tests/test_trainer_status.py read, as released by kubernetes-sigs/jobset
and kubeflow/trainer (Apache-2.0; sources in `SOURCES`), trimmed: every
schema's `description` is dropped (documentation only: no admission rule
reads it) and the rest is written as JSON, which is YAML, after a comment
naming the source, its commit and the SHA-256 of the upstream file
(descriptions are most of a CRD's bytes). `render(upstream_text, path)`
is the whole transformation; tests/test_data_copies.py checks that each
copy is it, applied to the upstream file whose digest the copy names.
"""

import hashlib
import json
import pathlib
import sys

import yaml

DATA_DIR = pathlib.Path(__file__).resolve().parent / "data" / "k8s" / "crds"
_JOBSET = ("kubernetes-sigs/jobset", "config/components/crd/bases")
_TRAINER = ("kubeflow/trainer", "manifests/base/crds")
_JOBSET_FILE = "jobset.x-k8s.io_jobsets.yaml"
_TRAINJOB_FILE = "trainer.kubeflow.org_trainjobs.yaml"
_RUNTIME_FILE = "trainer.kubeflow.org_clustertrainingruntimes.yaml"
# Folder under crds/ -> (repository, path in it, tag or line, commit).
_FOLDERS = {
    "": {_JOBSET_FILE: (*_JOBSET, "v0.13 development line",
                        "08dfbdfd682714a9ab929633eca8dc95315187e7"),
         **{f: (*_TRAINER, "main", "8c0f5059bd51ec3ba6d6a6a7b2e1471de7bc13b3")
            for f in (_TRAINJOB_FILE, _RUNTIME_FILE)}},
    "released/jobset-v0.11.1": {_JOBSET_FILE: (
        *_JOBSET, "v0.11.1", "ecaf56ab2dffb6edce074beda10ea092e71f62e5")},
    "released/jobset-v0.12.0": {_JOBSET_FILE: (
        *_JOBSET, "v0.12.0", "f22e565ac3cc3265c7c45ef67ecffdc689af5d77")},
    "released/trainer-v2.2.1": {f: (
        *_TRAINER, "v2.2.1", "c505fc7ccec98bb326cee56144bc5ee92be5048d")
                                for f in (_TRAINJOB_FILE, _RUNTIME_FILE)},
    "released/trainer-v2.3.0": {f: (
        *_TRAINER, "v2.3.0", "658725bdae5c7e3a0854d93ac6ff492e109a22ab")
                                for f in (_TRAINJOB_FILE, _RUNTIME_FILE)},
}
# Path relative to crds/ -> (repository, path in it, tag or line, commit).
SOURCES = {str(pathlib.PurePosixPath(folder, name)): source
           for folder, files in _FOLDERS.items()
           for name, source in files.items()}
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def trim(node, field_names=False):
  """`node` (a CRD or part of one) without schema `description`s.

  Args:
    node: parsed YAML.
    field_names: True when `node` is a `properties` mapping, whose keys are
      field names (a field may be called "description": it stays).
  """
  if isinstance(node, dict):
    return {key: trim(value, key == "properties" and not field_names)
            for key, value in node.items()
            if field_names or key != "description"}
  if isinstance(node, list):
    return [trim(value) for value in node]
  return node


def render(upstream_text, path):
  """The in-repo copy of the upstream CRD file `upstream_text`, which
  `SOURCES[path]` names."""
  repo, folder, tag, commit = SOURCES[path]
  digest = hashlib.sha256(upstream_text.encode("utf-8")).hexdigest()
  name = pathlib.PurePosixPath(path).name
  header = (f"# {repo} {folder}/{name} at {tag} ({commit}),\n"
            f"# sha256 {digest}; Apache License 2.0 (tests/data/k8s/LICENSE)."
            "\n# Trimmed by tests/_crd_copies.py: schema descriptions "
            "dropped, written as JSON.\n")
  trimmed = trim(yaml.load(upstream_text, Loader=_LOADER))
  body = json.dumps(trimmed, indent=0)
  if yaml.load(body, Loader=_LOADER) != trimmed:  # JSON read as YAML 1.1.
    raise ValueError(f"{path}: its JSON does not read back as the same YAML")
  return header + body + "\n"


def upstream_digest(copy_text):
  """The SHA-256 the copy's header names (its upstream file's)."""
  for line in copy_text.splitlines()[:3]:
    if line.startswith("# sha256 "):
      return line.split()[2].rstrip(";")
  raise ValueError("no '# sha256 ' line in the copy's header")


def main(argv):
  if len(argv) != 2:
    sys.exit(f"usage: python -m tests._crd_copies <upstream crds folder> "
             f"(got {argv[1:]}); it must hold {sorted(SOURCES)}")
  upstream = pathlib.Path(argv[1])
  for path in SOURCES:
    text = (upstream / path).read_text(encoding="utf-8")
    target = DATA_DIR / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(text, path), encoding="utf-8")
    print(f"{target}: {target.stat().st_size} bytes")


if __name__ == "__main__":
  main(sys.argv)
