"""deploy/: the Kubernetes manifests, the image build file and the example balancer.

Offline, with no cluster and no kustomize binary:

* every kustomization under ``deploy/`` is rendered by :func:`render`, a small loader
  of exactly the kustomize features the manifests use (``resources``, ``components``
  and JSON 6902 ``patches`` with a ``target``); any other key is refused, so a
  manifest can never depend on a feature this loader silently skips;
* every rendered object, and ``deploy/secrets.example.yaml``, is validated against
  the Kubernetes OpenAPI schemas that the ``kubernetes-validate`` package bundles
  (strict: an unknown field is an error), for the oldest and the newest release
  the manifests claim (:data:`KUBERNETES_VERSIONS`). The agent-sandbox ``Sandbox``
  is a custom resource with no bundled schema: its ``podTemplate`` is validated as
  a Pod and its ``volumeClaimTemplates`` as PersistentVolumeClaims;
* the container profile issue 25 point 5 asks for is checked on every pod
  template; the Dockerfile's user, paths, entry point and port are checked against
  the Deployment; ``haproxy -c`` checks the balancer configuration where haproxy
  is installed.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
KUBERNETES_VERSIONS = ("1.30.0", kubernetes_validate.latest_version())
"""The oldest Kubernetes release the manifests are written for (sidecar-free pod
specs, autoscaling/v2, policy/v1) and the newest one the validator knows."""

KUSTOMIZATION_KEYS = {"apiVersion", "kind", "resources", "components", "patches"}
OP_KEYS = {"op", "path", "value"}


class RenderError(Exception):
    """A kustomization uses something :func:`render` does not implement, or a patch
    does not apply."""


# ------------------------------------------------------------------ the loader


def _kustomization(directory: Path) -> dict[str, Any]:
    for name in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
        path = directory / name
        if path.is_file():
            data = yaml.safe_load(path.read_text())
            if not isinstance(data, dict):
                raise RenderError(f"{path}: not a mapping")
            unknown = set(data) - KUSTOMIZATION_KEYS
            if unknown:
                raise RenderError(f"{path}: unsupported kustomization keys {sorted(unknown)}")
            return data
    raise RenderError(f"{directory}: no kustomization file")


def _load_documents(path: Path) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    for doc in docs:
        if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
            raise RenderError(f"{path}: a document without apiVersion and kind")
    return docs


def _pointer(path: str) -> list[str]:
    """RFC 6901 JSON pointer tokens."""
    if not path.startswith("/"):
        raise RenderError(f"JSON pointer {path!r} must start with '/'")
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _apply_op(doc: Any, op: dict[str, Any]) -> None:
    """One RFC 6902 operation (add, replace, remove) on ``doc`` in place."""
    if set(op) - OP_KEYS or op.get("op") not in ("add", "replace", "remove"):
        raise RenderError(f"unsupported patch operation {op}")
    *parents, last = _pointer(op["path"])
    node = doc
    for token in parents:
        node = node[int(token)] if isinstance(node, list) else node[token]
    if isinstance(node, list):
        if op["op"] == "add":
            index = len(node) if last == "-" else int(last)
            node.insert(index, op["value"])
        elif op["op"] == "replace":
            node[int(last)] = op["value"]
        else:
            del node[int(last)]
    else:
        if op["op"] in ("replace", "remove") and last not in node:
            raise RenderError(f"{op['op']} {op['path']}: no such member")
        if op["op"] == "remove":
            del node[last]
        else:
            node[last] = op["value"]


def _matches(doc: dict[str, Any], target: dict[str, Any]) -> bool:
    group, _, version = doc["apiVersion"].rpartition("/")
    wanted = {
        "group": group,
        "version": version,
        "kind": doc["kind"],
        "name": doc["metadata"]["name"],
    }
    unknown = set(target) - set(wanted)
    if unknown:
        raise RenderError(f"unsupported patch target keys {sorted(unknown)}")
    return all(wanted[k] == v for k, v in target.items())


def _apply_patches(docs: list[dict[str, Any]], patches: list[dict[str, Any]], where: Path) -> None:
    for patch in patches:
        if set(patch) != {"target", "patch"}:
            raise RenderError(f"{where}: only JSON 6902 patches with a target are supported")
        ops = yaml.safe_load(patch["patch"])
        if not isinstance(ops, list):
            raise RenderError(f"{where}: a strategic-merge patch is not supported")
        hits = [d for d in docs if _matches(d, patch["target"])]
        if not hits:
            raise RenderError(f"{where}: patch target {patch['target']} matches nothing")
        for doc in hits:
            for op in ops:
                try:
                    _apply_op(doc, op)
                except (KeyError, IndexError, ValueError, TypeError) as exc:
                    raise RenderError(f"{where}: {op} does not apply: {exc!r}") from None


def render(directory: Path) -> list[dict[str, Any]]:
    """The objects ``kustomize build DIRECTORY`` would produce, for the features the
    manifests use: ``resources`` (files, or directories rendered recursively), then
    ``components`` (each adds its resources and patches what is there so far), then
    the kustomization's own ``patches``.

    Raises:
        RenderError: an unsupported key, a Component used as a resource (or the
            reverse), a patch that matches nothing or does not apply.
    """
    data = _kustomization(directory)
    if data.get("kind", "Kustomization") != "Kustomization":
        raise RenderError(f"{directory}: a {data['kind']} where a Kustomization belongs")
    docs: list[dict[str, Any]] = []
    for entry in data.get("resources", []):
        path = (directory / entry).resolve()
        docs.extend(render(path) if path.is_dir() else _load_documents(path))
    for entry in data.get("components", []):
        comp_dir = (directory / entry).resolve()
        comp = _kustomization(comp_dir)
        if comp.get("kind") != "Component":
            raise RenderError(f"{comp_dir}: listed as a component but kind is {comp.get('kind')}")
        for res in comp.get("resources", []):
            path = (comp_dir / res).resolve()
            docs.extend(render(path) if path.is_dir() else _load_documents(path))
        _apply_patches(docs, comp.get("patches", []), comp_dir)
    _apply_patches(docs, data.get("patches", []), directory)
    names = [(d["kind"], d["metadata"]["name"]) for d in docs]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise RenderError(f"{directory}: objects defined twice: {sorted(dupes)}")
    return docs


def kustomizations() -> list[Path]:
    """Every directory under deploy/ that kustomize can build (not the components,
    which are only built as part of one)."""
    found = []
    for path in sorted(DEPLOY.rglob("kustomization.yaml")):
        if yaml.safe_load(path.read_text()).get("kind", "Kustomization") == "Kustomization":
            found.append(path.parent)
    return found


# ------------------------------------------------------------------ validation

SANDBOX_API = "agents.x-k8s.io/v1alpha1"


def validation_errors(doc: dict[str, Any], version: str) -> list[str]:
    """What the Kubernetes schemas of ``version`` say is wrong with ``doc`` ([] when
    valid). A kind with no bundled schema is an error, except the agent-sandbox
    ``Sandbox``, whose embedded pod and claims are validated instead."""
    if doc.get("apiVersion") == SANDBOX_API and doc.get("kind") == "Sandbox":
        spec = doc.get("spec", {})
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": doc["metadata"]["name"],
                **spec.get("podTemplate", {}).get("metadata", {}),
            },
            "spec": spec.get("podTemplate", {}).get("spec"),
        }
        parts = [pod] + [
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", **claim}
            for claim in spec.get("volumeClaimTemplates", [])
        ]
        unknown = set(spec) - {"podTemplate", "volumeClaimTemplates", "lifecycle", "replicas"}
        errors = [f"Sandbox spec: unknown fields {sorted(unknown)}"] if unknown else []
        return errors + [e for part in parts for e in validation_errors(part, version)]
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        where = "/".join(str(p) for p in exc.path)
        return [f"{doc['kind']} {doc.get('metadata', {}).get('name')}: {where}: {exc.message}"]
    except kubernetes_validate.SchemaNotFoundError as exc:
        return [f"{doc['kind']}: no schema for {doc['apiVersion']} in Kubernetes {version}: {exc}"]
    return []


def all_documents() -> Iterator[tuple[str, dict[str, Any]]]:
    for directory in kustomizations():
        for doc in render(directory):
            yield str(directory.relative_to(REPO)), doc
    for doc in _load_documents(DEPLOY / "secrets.example.yaml"):
        yield "deploy/secrets.example.yaml", doc


def test_every_kustomization_is_found() -> None:
    names = {str(p.relative_to(DEPLOY)) for p in kustomizations()}
    assert {"base", "overlays/fleet", "overlays/workspaces", "agent-sandbox"} <= names


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_manifest_validates_against_the_kubernetes_schemas(version: str) -> None:
    errors = [
        f"{where}: {e}" for where, doc in all_documents() for e in validation_errors(doc, version)
    ]
    assert errors == []


def test_a_broken_manifest_is_refused() -> None:
    """The check above can fail: a misspelt field, a wrong type, a missing required
    member and a patch that misses its target are each caught."""
    deployment = next(d for d in render(DEPLOY / "base") if d["kind"] == "Deployment")
    version = KUBERNETES_VERSIONS[-1]
    assert validation_errors(deployment, version) == []
    misspelt = copy.deepcopy(deployment)
    misspelt["spec"]["template"]["spec"]["securityContext"]["runAsUsr"] = 10001
    wrong_type = copy.deepcopy(deployment)
    wrong_type["spec"]["replicas"] = "three"
    missing = copy.deepcopy(deployment)
    del missing["spec"]["template"]["spec"]["containers"][0]["name"]
    for broken in (misspelt, wrong_type, missing):
        assert validation_errors(broken, version) != []
    # The custom resource too: its pod template and its claims are really validated.
    sandbox = next(d for d in render(DEPLOY / "agent-sandbox") if d["kind"] == "Sandbox")
    assert validation_errors(sandbox, version) == []
    bad_pod = copy.deepcopy(sandbox)
    bad_pod["spec"]["podTemplate"]["spec"]["containers"][0]["imagePullPolicy"] = 3
    bad_claim = copy.deepcopy(sandbox)
    bad_claim["spec"]["volumeClaimTemplates"][0]["spec"]["accessMode"] = ["ReadWriteOnce"]
    bad_spec = copy.deepcopy(sandbox)
    bad_spec["spec"]["podTemplat"] = {}
    for broken in (bad_pod, bad_claim, bad_spec):
        assert validation_errors(broken, version) != []
    with pytest.raises(RenderError, match="matches nothing"):
        _apply_patches(
            [deployment],
            [{"target": {"kind": "Deployment", "name": "nope"}, "patch": "[]"}],
            DEPLOY,
        )


def test_the_loader_refuses_what_it_does_not_implement(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: []\nnamePrefix: x-\n")
    with pytest.raises(RenderError, match="namePrefix"):
        render(tmp_path)


# ------------------------------------------------------------------ the profile


def pod_specs() -> Iterator[tuple[str, dict[str, Any]]]:
    """(object name, pod spec) of every workload in every rendered kustomization."""
    for directory in kustomizations():
        for doc in render(directory):
            spec = doc.get("spec", {})
            if doc["kind"] in ("Deployment", "StatefulSet"):
                yield doc["metadata"]["name"], spec["template"]["spec"]
            elif doc["kind"] == "Sandbox":
                yield doc["metadata"]["name"], spec["podTemplate"]["spec"]


def test_every_pod_runs_the_restricted_profile() -> None:
    """Non-root, read-only root filesystem, no capability, no privilege escalation,
    seccomp RuntimeDefault, requests and limits, liveness and readiness probes, and
    a writable /tmp from an emptyDir (issue 25 point 5; the Pod Security Standards'
    "restricted" profile)."""
    seen = 0
    for name, spec in pod_specs():
        seen += 1
        pod_sc = spec.get("securityContext", {})
        assert pod_sc.get("runAsNonRoot") is True, name
        assert pod_sc.get("seccompProfile", {}).get("type") == "RuntimeDefault", name
        assert spec.get("automountServiceAccountToken") is False, name
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for c in spec["containers"]:
            sc = c.get("securityContext", {})
            assert sc.get("readOnlyRootFilesystem") is True, (name, c["name"])
            assert sc.get("allowPrivilegeEscalation") is False, (name, c["name"])
            assert sc.get("capabilities", {}).get("drop") == ["ALL"], (name, c["name"])
            assert "add" not in sc.get("capabilities", {}), (name, c["name"])
            assert sc.get("privileged", False) is False, (name, c["name"])
            for key in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(c.get("resources", {}).get(key, {})), (name, key)
            assert "livenessProbe" in c and "readinessProbe" in c, (name, c["name"])
            if c["name"] == "toolwire":
                assert c["livenessProbe"]["httpGet"]["path"] == "/healthz", name
                assert c["readinessProbe"]["httpGet"]["path"] == "/readyz", name
                mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
                assert "emptyDir" in volumes[mounts["/tmp"]], name
                keys = volumes[mounts["/run/secrets/toolwire"]]
                assert keys["secret"]["secretName"] == "toolwire-keys", name
                args = c["args"]
                assert args[0] == "serve"
                assert _arg(args, "--state-keys").startswith("/run/secrets/toolwire/"), name
                assert _arg(args, "--audience").startswith("https://"), name
                assert _arg(args, "--token-file").startswith("/run/secrets/toolwire/"), name
    assert seen >= 4  # base, fleet (+redis), workspaces (+statefulset), sandbox


def _arg(args: list[str], flag: str) -> str:
    assert flag in args, f"{flag} missing from {args}"
    return args[args.index(flag) + 1]


def test_the_base_holds_the_fleet_objects_and_they_agree() -> None:
    docs = {d["kind"]: d for d in render(DEPLOY / "base")}
    assert {
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "NetworkPolicy",
    } <= set(docs)
    deployment = docs["Deployment"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert docs["Service"]["spec"]["selector"].items() <= labels.items()
    assert docs["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"].items() <= labels.items()
    target = docs["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    # Default-deny egress: the policy selects the pods, governs Egress, allows none.
    policy = docs["NetworkPolicy"]["spec"]
    assert policy["podSelector"]["matchLabels"].items() <= labels.items()
    assert "Egress" in policy["policyTypes"] and policy["egress"] == []
    port = deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"]
    assert [p["port"] for r in policy["ingress"] for p in r["ports"]] == [port]


def test_the_redis_component_adds_the_bus_and_only_its_egress() -> None:
    docs = render(DEPLOY / "overlays" / "fleet")
    toolwire = next(
        d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "toolwire"
    )
    bus = _arg(toolwire["spec"]["template"]["spec"]["containers"][0]["args"], "--bus")
    assert re.fullmatch(r"redis://toolwire-redis:6379/\d+", bus)
    services = {d["metadata"]["name"] for d in docs if d["kind"] == "Service"}
    assert "toolwire-redis" in services
    extra = [
        d
        for d in docs
        if d["kind"] == "NetworkPolicy" and d["metadata"]["name"] == "toolwire-egress-to-bus"
    ]
    ports = {p["port"] for r in extra[0]["spec"]["egress"] for p in r["ports"]}
    assert ports == {6379, 53}
    # The base alone has no bus: a replica then hears only its own changes.
    base = next(d for d in render(DEPLOY / "base") if d["kind"] == "Deployment")
    assert "--bus" not in base["spec"]["template"]["spec"]["containers"][0]["args"]


def test_workspace_hosts_each_own_their_volume() -> None:
    docs = render(DEPLOY / "overlays" / "workspaces")
    sts = next(d for d in docs if d["kind"] == "StatefulSet")
    claims = sts["spec"]["volumeClaimTemplates"]
    assert [c["spec"]["accessModes"] for c in claims] == [["ReadWriteOnce"]]
    container = sts["spec"]["template"]["spec"]["containers"][0]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts[claims[0]["metadata"]["name"]] == _arg(container["args"], "--root")
    headless = next(
        d
        for d in docs
        if d["kind"] == "Service" and d["metadata"]["name"] == sts["spec"]["serviceName"]
    )
    assert headless["spec"]["clusterIP"] == "None"
    # The stateless Service never selects workspace hosts.
    stateless = next(
        d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == "toolwire"
    )
    pod_labels = sts["spec"]["template"]["metadata"]["labels"]
    assert not stateless["spec"]["selector"].items() <= pod_labels.items()


# ------------------------------------------------------------------ the image


def dockerfile_runtime(text: str) -> dict[str, Any]:
    """The final stage's USER, WORKDIR, ENV, VOLUME, EXPOSE and ENTRYPOINT."""
    lines = re.sub(r"\\\n", " ", text).splitlines()
    stages: list[list[str]] = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        stages[-1].append(line)
    final: dict[str, Any] = {"env": {}, "volumes": [], "expose": []}
    for line in stages[-1]:
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "USER":
            final["user"] = rest.strip()
        elif word == "WORKDIR":
            final["workdir"] = rest.strip()
        elif word == "ENV":
            for item in shlex.split(rest):
                key, _, value = item.partition("=")
                final["env"][key] = value
        elif word == "VOLUME":
            final["volumes"] = json.loads(rest)
        elif word == "EXPOSE":
            final["expose"] = [int(p.split("/")[0]) for p in rest.split()]
        elif word in ("ENTRYPOINT", "CMD"):
            final[word.lower()] = json.loads(rest)
    return final


def test_the_image_runtime_matches_the_deployment() -> None:
    """deploy/Dockerfile runs as the Deployment's uid/gid, writes only where the pod
    mounts a volume (/tmp and the root), starts `toolwire` so that the pod's args are
    `toolwire serve ...`, and exposes the port the container declares."""
    image = dockerfile_runtime((DEPLOY / "Dockerfile").read_text())
    deployment = next(d for d in render(DEPLOY / "base") if d["kind"] == "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    container = spec["containers"][0]
    uid, _, gid = image["user"].partition(":")
    assert (int(uid), int(gid)) == (
        spec["securityContext"]["runAsUser"],
        spec["securityContext"]["runAsGroup"],
    )
    assert int(uid) != 0
    assert image["entrypoint"] == ["toolwire"]
    assert container["args"][0] == image["cmd"][0] == "serve"
    port = container["ports"][0]["containerPort"]
    assert image["expose"] == [port]
    assert _arg(container["args"], "--http").endswith(f":{port}")
    mounts = {m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")}
    writable = {image["env"]["TMPDIR"], image["env"]["HOME"], image["workdir"], *image["volumes"]}
    assert writable <= mounts, (
        f"the image writes to {sorted(writable - mounts)}, which the pod keeps read-only"
    )
    assert _arg(container["args"], "--root") == image["workdir"]
    env = {e["name"]: e["value"] for e in container.get("env", [])}
    for key in ("TMPDIR", "HOME", "PYTHONSAFEPATH"):
        assert env[key] == image["env"][key], key


def test_the_image_copies_every_package_the_project_installs() -> None:
    """The build stage copies each source directory pyproject.toml maps a package to."""
    text = (DEPLOY / "Dockerfile").read_text()
    copied = set(re.findall(r"^COPY (\S+) ", text, flags=re.M))
    for directory in ("toolwire", "host", "client", "examples"):
        assert directory in copied


def test_the_image_can_use_the_change_bus() -> None:
    """The redis component passes --bus, which needs the redis package: the image
    installs the project with its 'fleet' extra (else the pods refuse to start)."""
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"pip install [^\n]*'\.\[fleet\]'", text), "install '.[fleet]'"


# ------------------------------------------------------------------ the balancer


def test_the_balancer_example_routes_each_kind_of_traffic() -> None:
    text = (DEPLOY / "haproxy.cfg").read_text()
    backends = dict(re.findall(r"^backend (\S+)\n((?:(?!^backend ).*\n?)*)", text, flags=re.M))
    assert "balance roundrobin" in backends["stateless"]
    assert "stick store-response res.hdr(Mcp-Session-Id)" in backends["sessions"]
    assert "stick match req.hdr(Mcp-Session-Id)" in backends["sessions"]
    assert "balance hdr(Toolwire-Workspace)" in backends["workspaces"]
    assert "use_backend stateless if modern" in text
    assert "acl modern req.hdr(MCP-Protocol-Version) -m str 2026-07-28" in text


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy is not installed here")
def test_haproxy_accepts_the_example_configuration() -> None:
    result = subprocess.run(
        ["haproxy", "-c", "-f", str(DEPLOY / "haproxy.cfg")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
