"""The real control plane on loopback: etcd, kube-apiserver, kube-controller-manager, KWOK, and
Volcano's vc-controller-manager and vc-scheduler — the binaries ``go/controlplane/build.sh`` builds
from the Go module proxy — started as processes the way envtest and KWOK's own tests run them.

* kube-apiserver serves HTTPS on a random loopback port (its self-signed certificate, trusted by the
  kubeconfig), authenticates a ``system:masters`` token and ServiceAccount tokens (TokenRequest;
  one EC key signs and verifies), authorizes with RBAC, and writes an audit log (every request's
  user, verb, resource and answer) that tests read instead of asking the server what it did.
* kube-controller-manager runs the controllers this project meets: garbage collector, namespace,
  disruption (PDB status), node lifecycle (it lifts the ``not-ready`` taint the API server puts on
  every new Node once KWOK reports it Ready), ServiceAccounts, ReplicaSets/Deployments/StatefulSets,
  pod GC.
* KWOK owns every node: Ready with a heartbeat Lease, bound pods Running, deleted pods gone
  (its ``node-initialize``, ``node-heartbeat-with-lease``, ``pod-ready`` and ``pod-delete`` stages,
  read from the module cache; not ``pod-complete``, which would finish Volcano Job pods).
* Volcano: its CRDs from the module cache, vc-controller-manager (Job, PodGroup, Queue, GC
  controllers) and vc-scheduler with the project's ``volcano-scheduler.conf``.

``RealCluster(workdir).up()`` starts it and writes ``workdir/kubeconfig``; ``down()`` stops every
process by PID. ``python -m realcluster up|down`` does the same by hand (``realcluster/__main__.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "go" / "controlplane" / "build.sh"
BIN = ROOT / ".controlplane" / "bin"
SCHEDULER_CONF = ROOT / "manifests" / "extender" / "volcano-scheduler.conf"
KWOK_STAGES = ("node/fast/node-initialize.yaml", "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
               "pod/fast/pod-ready.yaml", "pod/fast/pod-delete.yaml")  # fmt: skip
#: Volcano's CRDs, as its installer applies them (read from the module at run time, never copied)
VOLCANO_CRDS = ("config/crd/volcano/bases", "config/crd/jobflow/bases")
KCM_CONTROLLERS = ("garbagecollector", "namespace", "disruption", "nodelifecycle", "serviceaccount",
                   "serviceaccount-token", "replicaset", "deployment", "statefulset", "podgc")  # fmt: skip
VC_CONTROLLERS = ("job-controller", "pg-controller", "queue-controller", "gc-controller")
ADMIN_TOKEN = "repack-real-cluster-admin"
ORDER = ("etcd", "kube-apiserver", "kube-controller-manager", "kwok", "vc-controller-manager", "vc-scheduler")


class ClusterError(RuntimeError):
    """A component did not start or answer; the message names it and the tail of its log."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_port_outside_ephemeral() -> int:
    """A free port below the kernel's ephemeral range, for a port bound and released again test
    after test: one from the range (as :func:`free_port` gives) can meanwhile become the local end
    of any outgoing connection, and the next bind fails with "Address already in use"."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    for port in range(low - 1, max(1024, low - 8192), -1):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise ClusterError(f"no free port below the ephemeral range (from {low})")


def module_dir(component: str, module: str) -> Path:
    """Where ``module`` (at the version go/controlplane/COMPONENT/go.mod pins) sits in GOMODCACHE."""
    out = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", module], cwd=ROOT / "go" / "controlplane" / component,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if out.returncode != 0 or not out.stdout.strip():
        raise ClusterError(f"go list -m {module} (go/controlplane/{component}): {out.stderr.strip()}")
    return Path(out.stdout.strip())


def ensure_built() -> Path:
    """Build (or find up to date) the components; the bin folder."""
    if not shutil.which("go"):
        raise ClusterError("go not found: the real control plane is built from Go modules (Go >= 1.26)")
    done = subprocess.run([str(BUILD)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ClusterError(f"go/controlplane/build.sh failed:\n{done.stdout[-2000:]}{done.stderr[-4000:]}")
    return BIN


@dataclass
class Component:
    name: str
    argv: list[str]
    log: Path
    pid: int = 0
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        self.pid = self.proc.pid

    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return _pid_alive(self.pid)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
        if not self.pid or not self.alive():
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, sig)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.alive():
            time.sleep(0.05)
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            while self.alive():
                time.sleep(0.05)

    def tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie of ours counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return False


class RealCluster:
    """The real control plane under ``workdir`` (logs/, etcd data, certificates, kubeconfig)."""

    def __init__(self, workdir: Path, *, bin_dir: Path = BIN, scheduler_conf: str | None = None,
                 schedule_period: str = "1s") -> None:  # fmt: skip
        self.dir = workdir.resolve()
        self.bin = bin_dir
        self.ports = {"etcd": free_port(), "etcd-peer": free_port(), "apiserver": free_port(),
                      "vc-scheduler-metrics": free_port(), "vc-scheduler-healthz": free_port(),
                      "vc-controllers-healthz": free_port(), "kwok": free_port()}  # fmt: skip
        self.scheduler_conf = scheduler_conf if scheduler_conf is not None else default_scheduler_conf()
        self.schedule_period = schedule_period
        #: the binary the component "vc-scheduler" runs: Volcano's own, or "vc-scheduler-repack"
        #: (the same release with the repack plugin compiled in) inside ``scheduler_binary()``
        self.scheduler_bin = "vc-scheduler"
        self.components: dict[str, Component] = {}
        self.kubeconfig = self.dir / "kubeconfig"
        self.audit_log = self.dir / "audit.log"
        #: where this session's watchers serve the placement gate's webhook (registered by URL:
        #: there is no Service network here); one port, so one webhook-serving watcher at a time
        self.gate_port = free_port_outside_ephemeral()

    # -- paths and clients ------------------------------------------------------------------
    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def ca_file(self) -> Path:
        return self.dir / "certs" / "apiserver.crt"

    def kubectl(self, *args: str, kubeconfig: Path | None = None, stdin: str | None = None,
                check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:  # fmt: skip
        cmd = ["kubectl", "--kubeconfig", str(kubeconfig or self.kubeconfig), *args]
        done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout, check=False)
        if check and done.returncode != 0:
            raise ClusterError(f"{' '.join(cmd[3:])}: exit {done.returncode}\n{done.stdout}{done.stderr}")
        return done

    def write_kubeconfig(self, path: Path, token: str, user: str) -> Path:
        conf = {
            "apiVersion": "v1", "kind": "Config", "current-context": "real",
            "clusters": [{"name": "real", "cluster": {"server": self.server,
                                                       "certificate-authority": str(self.ca_file)}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "real", "context": {"cluster": "real", "user": user}}],
        }  # fmt: skip
        path.write_text(yaml.safe_dump(conf))
        return path

    def service_account_kubeconfig(self, namespace: str, name: str, path: Path) -> Path:
        """A kubeconfig authenticating as ServiceAccount ``namespace/name`` (a TokenRequest token)."""
        token = self.kubectl("create", "token", name, "-n", namespace, "--duration=6h").stdout.strip()
        return self.write_kubeconfig(path, token, f"{namespace}-{name}")

    def audit(self) -> Iterator[dict[str, Any]]:
        """The API server's audit events so far (ResponseComplete stage: one per answered request)."""
        try:
            text = self.audit_log.read_text()
        except FileNotFoundError:
            return
        for line in text.splitlines():
            if line.strip():
                yield json.loads(line)

    # -- lifecycle ----------------------------------------------------------------------------
    def up(self, timeout: float = 180.0) -> RealCluster:
        for sub in ("logs", "certs", "etcd"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        self._keys()
        (self.dir / "tokens.csv").write_text(f'{ADMIN_TOKEN},admin,admin-uid,"system:masters"\n')
        (self.dir / "audit-policy.yaml").write_text(yaml.safe_dump({
            "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
            "rules": [{"level": "Metadata"}],
        }))  # fmt: skip
        (self.dir / "volcano-scheduler.conf").write_text(self.scheduler_conf)
        self.write_kubeconfig(self.kubeconfig, ADMIN_TOKEN, "admin")
        deadline = time.monotonic() + timeout
        try:
            self.start("etcd")
            self._wait("etcd", deadline, lambda: _http_ok(f"http://127.0.0.1:{self.ports['etcd']}/health"))
            self.start("kube-apiserver")
            self._wait("kube-apiserver", deadline, self.ready)
            self._install_volcano_crds()
            for name in ORDER[2:]:
                self.start(name)
            self._wait("vc-scheduler", deadline, lambda: self._has_queue("default"))
            self._wait("kube-controller-manager", deadline, self._default_service_account)
        except BaseException:
            self.down()
            raise
        self._save_state()
        return self

    def down(self) -> None:
        for name in reversed(ORDER):
            comp = self.components.get(name)
            if comp is not None:
                comp.stop()

    def start(self, name: str) -> Component:
        argv = self._argv(name)
        comp = Component(name, argv, self.dir / "logs" / f"{name}.log")
        comp.start()
        self.components[name] = comp
        return comp

    def stop(self, name: str, sig: int = signal.SIGTERM) -> None:
        self.components[name].stop(sig)

    def restart(self, name: str, *, sig: int = signal.SIGTERM, timeout: float = 90.0) -> None:
        """Stop one component (``sig``: SIGKILL for a crash) and start it again with the same flags and data."""
        self.stop(name, sig)
        self.start(name)
        deadline = time.monotonic() + timeout
        if name == "etcd":
            self._wait(name, deadline, lambda: _http_ok(f"http://127.0.0.1:{self.ports['etcd']}/health"))
            self._wait("kube-apiserver", deadline, self.ready)
        elif name == "kube-apiserver":
            self._wait(name, deadline, self.ready)
        self._save_state()

    @contextlib.contextmanager
    def scheduler_binary(self, binary: str, conf: str) -> Iterator[None]:
        """Run ``binary`` as the cluster's vc-scheduler with ``conf`` (same flags, same ports),
        then Volcano's own again with the conf it had."""
        conf_path = self.dir / "volcano-scheduler.conf"
        original = conf_path.read_text()
        self.stop("vc-scheduler")
        conf_path.write_text(conf)
        self.scheduler_bin = binary
        try:
            self.start("vc-scheduler")
            yield
        finally:
            self.stop("vc-scheduler")
            conf_path.write_text(original)
            self.scheduler_bin = "vc-scheduler"
            self.start("vc-scheduler")
            self._save_state()

    def ready(self) -> bool:
        ctx = ssl.create_default_context(cafile=str(self.ca_file)) if self.ca_file.exists() else None
        if ctx is None:
            return False
        return _http_ok(f"{self.server}/readyz", token=ADMIN_TOKEN, ctx=ctx)

    # -- internals -------------------------------------------------------------------------
    def _keys(self) -> None:
        key, pub = self.dir / "certs" / "sa.key", self.dir / "certs" / "sa.pub"
        if not key.exists():
            subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(key)],
                           check=True, capture_output=True)  # fmt: skip
            subprocess.run(["openssl", "ec", "-in", str(key), "-pubout", "-out", str(pub)],
                           check=True, capture_output=True)  # fmt: skip

    def _argv(self, name: str) -> list[str]:
        d, p, b = self.dir, self.ports, self.bin
        if name == "etcd":
            peer = f"http://127.0.0.1:{p['etcd-peer']}"
            return [str(b / "etcd"), "--name=repack", f"--data-dir={d / 'etcd'}",
                    f"--listen-client-urls=http://127.0.0.1:{p['etcd']}",
                    f"--advertise-client-urls=http://127.0.0.1:{p['etcd']}",
                    f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
                    f"--initial-cluster=repack={peer}", "--unsafe-no-fsync", "--log-level=warn",
                    "--quota-backend-bytes=4294967296"]  # fmt: skip
        if name == "kube-apiserver":
            return [str(b / "kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{p['etcd']}",
                    "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={p['apiserver']}",
                    f"--cert-dir={d / 'certs'}", "--service-cluster-ip-range=10.96.0.0/16",
                    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                    f"--service-account-key-file={d / 'certs' / 'sa.pub'}",
                    f"--service-account-signing-key-file={d / 'certs' / 'sa.key'}",
                    f"--token-auth-file={d / 'tokens.csv'}", "--authorization-mode=RBAC",
                    # envtest's choice: no token controller is asked to mount tokens into pods
                    "--disable-admission-plugins=ServiceAccount", "--endpoint-reconciler-type=none",
                    f"--audit-policy-file={d / 'audit-policy.yaml'}", f"--audit-log-path={d / 'audit.log'}",
                    "--audit-log-mode=blocking", "--allow-privileged=true", "--v=1"]  # fmt: skip
        if name == "kube-controller-manager":
            return [str(b / "kube-controller-manager"), f"--kubeconfig={self.kubeconfig}",
                    f"--controllers={','.join(KCM_CONTROLLERS)}", "--leader-elect=false",
                    "--use-service-account-credentials=false", "--secure-port=0",
                    f"--service-account-private-key-file={d / 'certs' / 'sa.key'}",
                    f"--root-ca-file={self.ca_file}", "--concurrent-gc-syncs=5", "--v=1"]  # fmt: skip
        if name == "kwok":
            stages = module_dir("kwok", "sigs.k8s.io/kwok") / "kustomize" / "stage"
            conf = [f"--config={stages / s}" for s in KWOK_STAGES]
            return [str(b / "kwok"), f"--kubeconfig={self.kubeconfig}", "--manage-all-nodes=true",
                    f"--server-address=127.0.0.1:{p['kwok']}", "--cidr=10.0.0.0/16", *conf]  # fmt: skip
        if name == "vc-controller-manager":
            return [str(b / "vc-controller-manager"), f"--kubeconfig={self.kubeconfig}", "--leader-elect=false",
                    f"--controllers={','.join(VC_CONTROLLERS)}", "--enable-healthz",
                    f"--healthz-address=127.0.0.1:{p['vc-controllers-healthz']}",
                    f"--listen-address=127.0.0.1:{free_port()}", "--v=2"]  # fmt: skip
        if name == "vc-scheduler":
            return [str(b / self.scheduler_bin), f"--kubeconfig={self.kubeconfig}", "--leader-elect=false",
                    f"--scheduler-conf={d / 'volcano-scheduler.conf'}", f"--schedule-period={self.schedule_period}",
                    "--enable-healthz", f"--healthz-address=127.0.0.1:{p['vc-scheduler-healthz']}",
                    f"--listen-address=127.0.0.1:{p['vc-scheduler-metrics']}", "--cache-dumper=false",
                    "--v=2"]  # fmt: skip
        raise KeyError(name)

    def _install_volcano_crds(self) -> None:
        base = module_dir("volcano", "volcano.sh/volcano")
        files = sorted(f for sub in VOLCANO_CRDS for f in (base / sub).glob("*.yaml"))
        args = [a for f in files for a in ("-f", str(f))]
        self.kubectl("apply", "--server-side", "--field-manager=volcano-installer", *args, timeout=120)
        self.wait_established(*[_crd_name(f) for f in files])
        self.kubectl("create", "namespace", "volcano-system")

    def wait_established(self, *crds: str, timeout: float = 90.0) -> None:
        """Until every CRD named is Established. Not ``kubectl wait --for=condition=Established``:
        right after a create the CRD may have no ``status.conditions`` yet, and kubectl then fails
        at once (``.status.conditions accessor error: <nil>``) instead of waiting."""
        deadline = time.monotonic() + timeout
        path = '{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Established")].status}{"\\n"}{end}'
        while True:
            listed = self.kubectl("get", "crd", "-o", f"jsonpath={path}", check=False).stdout
            established = {line.split("=", 1)[0] for line in listed.splitlines() if line.endswith("=True")}
            missing = sorted(set(crds) - established)
            if not missing:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"CRDs not Established within {timeout:g} s: {', '.join(missing)}")
            time.sleep(0.2)

    def _has_queue(self, name: str) -> bool:
        return self.kubectl("get", "queue.scheduling.volcano.sh", name, check=False).returncode == 0

    def _default_service_account(self) -> bool:
        return self.kubectl("get", "serviceaccount", "default", "-n", "default", check=False).returncode == 0

    def _wait(self, name: str, deadline: float, ok: Any) -> None:
        while time.monotonic() < deadline:
            for comp in self.components.values():
                if not comp.alive():
                    raise ClusterError(f"{comp.name} exited ({comp.log}):\n{comp.tail()}")
            if ok():
                return
            time.sleep(0.2)
        late = self.components.get(name)
        raise ClusterError(f"{name} not ready in time" + (f" ({late.log}):\n{late.tail()}" if late else ""))

    def _save_state(self) -> None:
        state = {"server": self.server, "kubeconfig": str(self.kubeconfig), "ports": self.ports,
                 "pids": {n: c.pid for n, c in self.components.items()}}  # fmt: skip
        (self.dir / "state.json").write_text(json.dumps(state, indent=2))


def default_scheduler_conf() -> str:
    """The project's ``volcano-scheduler.conf`` without the extender tier (no sidecar listens here)."""
    conf = yaml.safe_load(SCHEDULER_CONF.read_text())
    conf["tiers"] = [t for t in conf["tiers"] if not any(p["name"] == "extender" for p in t["plugins"])]
    return yaml.safe_dump(conf, sort_keys=False)


def stop_by_state(workdir: Path) -> list[str]:
    """Stop the processes ``up`` recorded in ``workdir/state.json`` (by PID; their process groups)."""
    state = json.loads((workdir / "state.json").read_text())
    stopped = []
    for name in reversed(ORDER):
        pid = state["pids"].get(name)
        if pid and _pid_alive(pid):
            Component(name, [], workdir / "logs" / f"{name}.log", pid=pid).stop()
            stopped.append(name)
    return stopped


def _crd_name(path: Path) -> str:
    return str(yaml.safe_load(path.read_text())["metadata"]["name"])


def _http_ok(url: str, *, token: str = "", ctx: ssl.SSLContext | None = None) -> bool:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=2, context=ctx) as resp:
            return bool(resp.status == 200)
    except (OSError, ValueError):
        return False
