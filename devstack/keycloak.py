"""A local Keycloak on 127.0.0.1: the identity provider of the tests and the demo.

`ensure_keycloak()` fetches the distribution (org.keycloak:keycloak-quarkus-dist, a 165 MB zip)
from Maven Central once into the cache folder (.cache/, or $RMQ_CACHE_DIR, as RocketMQ's jars),
unpacks it and prepares it, under a file lock so parallel runs do not race:
- the first `kc.sh start-dev` re-augments the distribution for development mode (about 30 s),
  written into its lib/quarkus/ once;
- the first start also creates the database (schema, the master realm, the console realm
  imported from devstack/keycloak/console-realm.json): about 45 s on 2 busy cores. That H2
  database (1 MB) is kept as a template named after the realm file's hash, so every later
  start copies it instead, and an edited realm file makes a new one.

`LocalKeycloak` runs one server in a home folder of its own: a copy of bin/kc.sh (it finds its
home from its own real path), links to the cached lib/, conf/, themes/ and providers/, and its
own data/ (a copy of the template, the realm file in data/import/ for --import-realm). What a
test changes (a user removed from a group) stays in that copy; several servers may run at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from .processes import ManagedProcess, StartupError, dying_with_parent, free_port
from .runtime import cache_dir, java_executable

KEYCLOAK_VERSION = "26.5.6"
ARTIFACT = f"org.keycloak:keycloak-quarkus-dist:{KEYCLOAK_VERSION}:zip"
REALM_FILE = Path(__file__).resolve().parent / "keycloak" / "console-realm.json"
# the master realm's administrator (the admin REST API): loopback only, development only
KC_DEBUG_VARIABLES = ("DEBUG", "DEBUG_PORT", "DEBUG_ADDR", "DEBUG_SUSPEND")
ADMIN_USER = "admin"
ADMIN_PASSWORD = "keycloak-dev-admin"
# start-dev with the template database: 34 s on 2 cores busy with another test run (10 s idle)
STARTUP_TIMEOUT = 300.0
# the first start (augmentation, then the database): the augmentation alone took 250 s on 2
# cores shared with a RocketMQ test run (load 20), 31 s at load 2
PREPARE_TIMEOUT = 1200.0
LINKED = ("lib", "conf", "themes", "providers")


def realm() -> dict:
    return json.loads(REALM_FILE.read_text())


def console_client(realm_data: dict | None = None) -> dict:
    """The realm's client for the console (its id and secret are the console's OIDC settings)."""
    clients = (realm_data or realm())["clients"]
    return next(client for client in clients if client["clientId"] == "rocketmq-console")


def realm_users(realm_data: dict | None = None) -> dict[str, dict]:
    """username -> {"password", "groups"} of the realm file's users (the demo prints them); not
    the console client's service account (it reads users through the admin API, no password)."""
    return {
        user["username"]: {"password": user["credentials"][0]["value"], "groups": user.get("groups", [])}
        for user in (realm_data or realm())["users"]
        if "serviceAccountClientId" not in user
    }


def _realm_hash() -> str:
    return hashlib.sha256(REALM_FILE.read_bytes()).hexdigest()[:16]


def ensure_keycloak(*, log=print) -> Path:
    """The prepared distribution folder (downloaded, unpacked, augmented, with a template
    database for the current realm file)."""
    root = cache_dir()
    home = root / f"keycloak-{KEYCLOAK_VERSION}"
    if (home / "stamp").exists() and _template(home).exists():
        return home
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".keycloak.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (home / "stamp").exists():
            _download_and_unpack(root, home, log)
        if not _template(home).exists():
            _make_template(home, log)
    return home


def _template(home: Path) -> Path:
    return home / f"template-{_realm_hash()}"


def _download_and_unpack(root: Path, home: Path, log) -> None:
    log(f"Fetching Keycloak {KEYCLOAK_VERSION} from Maven Central (165 MB, once) ...")
    started = time.monotonic()
    download = Path(tempfile.mkdtemp(prefix="keycloak-download-", dir=root))
    try:
        command = [
            shutil.which("mvn") or "mvn", "-B", "-q", f"-Dmaven.repo.local={root / 'm2'}",
            "dependency:copy", f"-Dartifact={ARTIFACT}", f"-DoutputDirectory={download}",
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"Maven failed ({result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
        archive = next(download.glob("*.zip"))
        unpacked = download / "unpacked"
        _unzip(archive, unpacked)
        if home.exists():
            shutil.rmtree(home)
        (unpacked / f"keycloak-{KEYCLOAK_VERSION}").rename(home)
    finally:
        shutil.rmtree(download, ignore_errors=True)
    # the unpacked copy is what is used: the zip would keep another 165 MB in the Maven repository
    group, artifact, version = ARTIFACT.split(":")[:2] + [KEYCLOAK_VERSION]
    shutil.rmtree(root / "m2" / Path(*group.split(".")) / artifact / version, ignore_errors=True)
    (home / "stamp").write_text(ARTIFACT)
    log(f"Keycloak {KEYCLOAK_VERSION} fetched and unpacked in {time.monotonic() - started:.0f} s")


def _unzip(archive: Path, target: Path) -> None:
    """Unzip keeping the files' modes (kc.sh must stay executable); zipfile alone drops them."""
    with zipfile.ZipFile(archive) as zipped:
        for info in zipped.infolist():
            path = Path(zipped.extract(info, target))
            mode = info.external_attr >> 16
            if mode and not info.is_dir():
                path.chmod(mode & 0o777)


def _make_template(home: Path, log) -> None:
    log("Preparing Keycloak for development mode and importing the console realm (once) ...")
    started = time.monotonic()
    server = LocalKeycloak(home, template=None)
    try:
        try:
            server.start(timeout=PREPARE_TIMEOUT)
        finally:
            code = server.stop()
        if code is None or code < 0:  # killed: the database may not have been written out
            raise StartupError(f"keycloak did not stop cleanly ({code}):\n{server.log_tail()}")
        partial = home / f".template-{os.getpid()}"
        shutil.copytree(server.home / "data" / "h2", partial / "h2")
        partial.rename(_template(home))
    finally:
        shutil.rmtree(server.home, ignore_errors=True)
    log(f"Keycloak ready for development in {time.monotonic() - started:.0f} s")


class LocalKeycloak:
    """One Keycloak server (start-dev, embedded H2) on a free port of 127.0.0.1."""

    def __init__(self, distribution: Path, *, template: Path | None | bool = True, port: int | None = None):
        self.distribution = distribution
        self.port = port or free_port()
        self.home = Path(tempfile.mkdtemp(prefix="keycloak-"))
        self.process: ManagedProcess | None = None
        self.startup_seconds: float | None = None
        (self.home / "bin").mkdir()
        shutil.copy2(distribution / "bin" / "kc.sh", self.home / "bin" / "kc.sh")
        for name in LINKED:
            (self.home / name).symlink_to(distribution / name)
        (self.home / "data" / "import").mkdir(parents=True)
        shutil.copy2(REALM_FILE, self.home / "data" / "import" / REALM_FILE.name)
        source = _template(distribution) if template is True else template
        if source:
            shutil.copytree(source / "h2", self.home / "data" / "h2")
        realm_data = realm()
        self.realm = realm_data["realm"]
        self.client_id = console_client(realm_data)["clientId"]
        self.client_secret = console_client(realm_data)["secret"]
        self.users = realm_users(realm_data)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def issuer(self) -> str:
        return f"{self.url}/realms/{self.realm}"

    def start(self, timeout: float = STARTUP_TIMEOUT) -> LocalKeycloak:
        environment = {
            # kc.sh reads DEBUG=true (which the test suite and development set for Django) as
            # "start a JDWP debugger on port 8787 of every interface": never, and a second
            # Keycloak would fail on the taken port
            **{k: v for k, v in os.environ.items() if k not in KC_DEBUG_VARIABLES},
            "KC_BOOTSTRAP_ADMIN_USERNAME": ADMIN_USER,
            "KC_BOOTSTRAP_ADMIN_PASSWORD": ADMIN_PASSWORD,
            # kc.sh runs $JAVA_HOME/bin/java, else `java`: the same JDK 17 as RocketMQ's JVMs, in
            # the background of kc.sh, through a launcher that makes it die with kc.sh (which
            # dies with us: a killed test session left Keycloak's JVM running without it)
            "JAVA": str(dying_with_parent(java_executable(), self.home)),
        }
        started = time.monotonic()
        self.process = ManagedProcess(
            "keycloak",
            [
                str(self.home / "bin" / "kc.sh"),
                "start-dev",
                "--http-host",
                "127.0.0.1",
                "--http-port",
                str(self.port),
                "--import-realm",
            ],  # fmt: skip
            log_path=self.home / "keycloak.log",
            cwd=self.home,
            env=environment,
        )
        try:
            self.process.wait_until(self._discovery_answers, timeout, "the realm's discovery document")
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def _discovery_answers(self) -> bool:
        url = f"{self.issuer}/.well-known/openid-configuration"
        with urllib.request.urlopen(url, timeout=2) as response:
            return json.loads(response.read())["issuer"] == self.issuer

    def log_tail(self, lines: int = 40) -> str:
        return self.process.log_tail(lines) if self.process else ""

    def stop(self) -> int | None:
        """SIGTERM to kc.sh's process group (the JVM shuts down in a few seconds); its exit code.
        The home folder stays until discard()."""
        return self.process.stop(grace=30) if self.process is not None else None

    def discard(self) -> None:
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)

    # --- the admin REST API (tests change users and groups with it) ---

    def admin_token(self) -> str:
        """The master realm administrator's access token, kept until shortly before it expires."""
        token, expires = getattr(self, "_admin_token", ("", 0.0))
        if time.monotonic() < expires:
            return token
        data = urllib.parse.urlencode(
            {"grant_type": "password", "client_id": "admin-cli", "username": ADMIN_USER, "password": ADMIN_PASSWORD}
        ).encode()
        url = f"{self.url}/realms/master/protocol/openid-connect/token"
        with urllib.request.urlopen(url, data=data, timeout=60) as response:
            answer = json.loads(response.read())
        self._admin_token = (answer["access_token"], time.monotonic() + answer["expires_in"] - 10)
        return answer["access_token"]

    def admin(self, method: str, path: str, body=None):
        """One admin REST call (`path` under /admin/realms/<realm>); the JSON answer or None."""
        request = urllib.request.Request(
            f"{self.url}/admin/realms/{self.realm}{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.admin_token()}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read()
        return json.loads(text) if text else None

    def user_id(self, username: str) -> str:
        return self.admin("GET", f"/users?username={username}&exact=true")[0]["id"]

    def group_id(self, name: str) -> str:
        return next(group["id"] for group in self.admin("GET", "/groups") if group["name"] == name)

    def set_membership(self, username: str, group: str, member: bool) -> None:
        path = f"/users/{self.user_id(username)}/groups/{self.group_id(group)}"
        self.admin("PUT" if member else "DELETE", path)

    def set_enabled(self, username: str, enabled: bool) -> None:
        path = f"/users/{self.user_id(username)}"
        self.admin("PUT", path, {**self.admin("GET", path), "enabled": enabled})

    def set_backchannel_logout(self, url: str) -> None:
        """Where Keycloak posts the console's logout tokens (OpenID Connect back-channel logout).
        The realm file names the demo's console (http://127.0.0.1:8000); a console elsewhere (a
        test's) is set here, on the running server only."""
        found = self.admin("GET", f"/clients?clientId={urllib.parse.quote(self.client_id)}")[0]
        path = f"/clients/{found['id']}"
        client = self.admin("GET", path)
        client["attributes"] = {**client.get("attributes", {}), "backchannel.logout.url": url}
        self.admin("PUT", path, client)
