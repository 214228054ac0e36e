//! Containers: the command a `docker run` / `docker exec` (or podman, nerdctl, `docker compose`)
//! runs inside, and whether that container can reach the host's files.
//!
//! A `docker run` is *sandboxed* only when every `-v`/`--volume` is a named or anonymous
//! volume or read-only (`:ro`), every `--mount` is a volume/tmpfs or read-only, and there
//! is no `--volumes-from`. `docker exec` and `docker compose` are never sandboxed: what
//! the container mounts is not on the command line.
//!
//! Mounts are about files. A container that shares the host's network or process namespace
//! (`--network host`, `--net=host`, `--pid host`) reaches the host's running app (its
//! bridge on localhost, its processes), whatever it mounts: [`Container::host_app`].

use super::programs::{self, COMPOSE_OPTS, Container as Kind, Grammar};
use super::word::{Word, command_name};

/// The container part of a docker command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Container {
    /// `run`, `exec`, `compose run`, ...
    pub verb: &'static str,
    /// The command run in the container (entrypoint override first), possibly empty.
    pub argv: Vec<Word>,
    /// The container cannot write the host's files.
    pub sandboxed: bool,
    /// The container shares the host's network or pid namespace: it reaches the app.
    pub host_app: bool,
}

const RUN_BOOL_LONG: &[&str] = &[
    "detach",
    "interactive",
    "tty",
    "rm",
    "privileged",
    "init",
    "publish-all",
    "read-only",
    "no-healthcheck",
    "oom-kill-disable",
    "sig-proxy",
    "quiet",
    "disable-content-trust",
    "help",
    "no-deps",
    "service-ports",
    "use-aliases",
    "build",
    "remove-orphans",
];
/// Short options that take a value (`-v`, `-e`, `-w`, ...); the rest are flags (`-dit`).
const RUN_SHORT_VALUE: &str = "aechlmpuvw";

/// Parse `argv` when its head is docker/podman/docker-compose; `None` otherwise or when
/// the subcommand runs nothing in a container.
pub fn container(argv: &[Word]) -> Option<Container> {
    let prog = programs::get(&command_name(&argv.first()?.text))?;
    let mut i = skip_options(argv, 1, prog.opts);
    let compose = match prog.container? {
        Kind::Engine => {
            if argv.get(i).is_some_and(|w| w.text == "container") {
                i += 1;
            }
            if argv.get(i).is_some_and(|w| w.text == "compose") {
                i = skip_options(argv, i + 1, COMPOSE_OPTS);
                true
            } else {
                false
            }
        }
        Kind::Compose => true,
    };
    let verb = argv.get(i)?.text.as_str();
    let verb: &'static str = match (compose, verb) {
        (false, "run") => "run",
        (false, "exec") => "exec",
        (true, "run") => "compose run",
        (true, "exec") => "compose exec",
        _ => return None,
    };
    let mut opts = Opts {
        safe: true,
        host_app: false,
        entrypoint: None,
    };
    let target = opts.parse(argv, i + 1);
    let mut out = Vec::new();
    if let Some(e) = opts.entrypoint {
        out.push(e);
    }
    out.extend(argv.iter().skip(target + 1).cloned());
    Some(Container {
        verb,
        argv: out,
        sandboxed: verb == "run" && opts.safe,
        host_app: opts.host_app,
    })
}

/// Past the options from `i` on: each word starting with `-`, and the value after those
/// that take one by `g`.
fn skip_options(argv: &[Word], mut i: usize, g: Grammar) -> usize {
    while let Some(w) = argv.get(i) {
        let t = w.text.as_str();
        if !t.starts_with('-') {
            break;
        }
        i += if g.takes_value(t) { 2 } else { 1 };
    }
    i
}

struct Opts {
    safe: bool,
    host_app: bool,
    entrypoint: Option<Word>,
}

impl Opts {
    /// Walk the options from `i`; returns the index of the image (or container/service).
    fn parse(&mut self, argv: &[Word], mut i: usize) -> usize {
        while let Some(w) = argv.get(i) {
            let t = w.text.as_str();
            if t == "--" {
                return i + 1;
            }
            if let Some(long) = t.strip_prefix("--") {
                let (name, inline) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (long, None),
                };
                if RUN_BOOL_LONG.contains(&name) {
                    i += 1;
                    continue;
                }
                let value = match inline {
                    Some(v) => {
                        i += 1;
                        v
                    }
                    None => {
                        let v = argv.get(i + 1).map(|w| w.text.clone()).unwrap_or_default();
                        i += 2;
                        v
                    }
                };
                self.option(name, &value, argv.get(i - 1));
                continue;
            }
            if t.len() > 1 && t.starts_with('-') {
                let bundle = &t[1..];
                i += 1;
                for (k, c) in bundle.char_indices() {
                    if RUN_SHORT_VALUE.contains(c) {
                        let rest = &bundle[k + c.len_utf8()..];
                        let value = if rest.is_empty() {
                            i += 1;
                            argv.get(i - 1).map(|w| w.text.clone()).unwrap_or_default()
                        } else {
                            rest.to_string()
                        };
                        let name = match c {
                            'v' => "volume",
                            _ => "",
                        };
                        self.option(name, &value, None);
                        break;
                    }
                }
                continue;
            }
            return i;
        }
        argv.len()
    }

    fn option(&mut self, name: &str, value: &str, word: Option<&Word>) {
        match name {
            "volume" => self.safe &= volume_safe(value),
            "mount" => self.safe &= mount_safe(value),
            "volumes-from" => self.safe = false,
            "network" | "net" | "pid" => self.host_app |= value.eq_ignore_ascii_case("host"),
            "entrypoint" => {
                let mut w = word.cloned().unwrap_or_default();
                w.text = value.to_string();
                w.subs.clear();
                self.entrypoint = Some(w);
            }
            _ => {}
        }
    }
}

/// `-v` spec: `name:/path[:opts]`, `/host:/path[:opts]`, `C:\host:/path`, `/anon`.
pub fn volume_safe(spec: &str) -> bool {
    let b = spec.as_bytes();
    // A Windows drive path as the source: `C:\x:/y` or `C:/x:/y`.
    let drive =
        b.len() > 2 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'\\' | b'/');
    let rest = if drive { &spec[2..] } else { spec };
    let parts: Vec<&str> = rest.split(':').collect();
    if parts.len() == 1 && !drive {
        return true; // anonymous volume: `-v /data`
    }
    let readonly = parts.len() >= 3
        && parts[parts.len() - 1]
            .split(',')
            .any(|o| o == "ro" || o == "readonly");
    if readonly {
        return true;
    }
    if drive {
        return false;
    }
    is_volume_name(parts[0])
}

fn is_volume_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// `--mount` spec: `type=bind,source=…,target=…,readonly`.
pub fn mount_safe(spec: &str) -> bool {
    let mut kind = "volume";
    let mut readonly = false;
    for field in spec.split(',') {
        let (k, v) = field.split_once('=').unwrap_or((field, "true"));
        match k {
            "type" => kind = v,
            "readonly" | "ro" => readonly = matches!(v, "true" | "1" | ""),
            _ => {}
        }
    }
    readonly || matches!(kind, "volume" | "tmpfs")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> Option<Container> {
        let w: Vec<Word> = s.split_whitespace().map(Word::plain).collect();
        container(&w)
    }

    fn argv(c: &Container) -> String {
        c.argv
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn run_payload_and_mounts() {
        let r = c("docker run --rm -v kazuo-linux:/project img npm run build").unwrap();
        assert!(r.sandboxed);
        assert_eq!(argv(&r), "npm run build");
        let r = c("docker run --rm -v /src:/project:ro -it img make").unwrap();
        assert!(r.sandboxed);
        assert_eq!(argv(&r), "make");
        let r = c("docker run -v .:/project img npm run build").unwrap();
        assert!(!r.sandboxed);
        let r = c("docker run -v=/src:/p img x").unwrap();
        assert!(!r.sandboxed);
        let r = c("docker run --volumes-from other img x").unwrap();
        assert!(!r.sandboxed);
        let r = c("docker run --mount type=bind,source=/s,target=/t img x").unwrap();
        assert!(!r.sandboxed);
        let r = c("docker run --mount type=bind,source=/s,target=/t,readonly img x").unwrap();
        assert!(r.sandboxed);
        let r = c("docker run --mount source=vol,target=/t img x").unwrap();
        assert!(r.sandboxed);
        // nerdctl and `docker container run` are the same engine.
        let r = c("nerdctl run --rm -v /s:/w img rm -rf dist").unwrap();
        assert!(!r.sandboxed);
        assert_eq!(argv(&r), "rm -rf dist");
        let r = c("docker container run --mount type=bind,src=/s,dst=/w img x").unwrap();
        assert!(!r.sandboxed);
        let r = c("docker run -e A=1 --name b -w /p --entrypoint sh img -c ls").unwrap();
        assert_eq!(argv(&r), "sh -c ls");
        let r = c("docker container run -dit img").unwrap();
        assert_eq!(argv(&r), "");
    }

    #[test]
    fn host_namespaces_reach_the_app() {
        for s in [
            "docker run --network host img curl x",
            "docker run --network=host img curl x",
            "docker run --net=host -v vol:/p img curl x",
            "docker run --pid=host img pkill electron",
            "podman run --pid host img pkill electron",
            "docker exec --pid=host box kill 1",
        ] {
            assert!(c(s).unwrap().host_app, "{s}");
        }
        for s in [
            "docker run --network bridge img curl x",
            "docker run --network=container:db img curl x",
            "docker run --pid=container:db img pkill electron",
            "docker run --hostname host img curl x",
            "docker run -e NET=host img curl x",
        ] {
            assert!(!c(s).unwrap().host_app, "{s}");
        }
        assert!(
            c("docker run --net=host -v vol:/p img npm run build")
                .unwrap()
                .sandboxed
        );
    }

    #[test]
    fn exec_and_compose_are_never_sandboxed() {
        let r = c("docker exec -it box npm run build").unwrap();
        assert!(!r.sandboxed);
        assert_eq!(argv(&r), "npm run build");
        let r = c("docker compose -f x.yml run --rm app npm run build").unwrap();
        assert!(!r.sandboxed);
        assert_eq!(argv(&r), "npm run build");
        assert!(c("docker ps").is_none());
        assert!(c("ls").is_none());
    }

    #[test]
    fn volume_specs() {
        assert!(volume_safe("data:/data"));
        assert!(volume_safe("/anon"));
        assert!(volume_safe("/host:/c:ro"));
        assert!(volume_safe("/host:/c:ro,z"));
        assert!(!volume_safe("/host:/c"));
        assert!(!volume_safe("./x:/c"));
        assert!(!volume_safe("$PWD:/c"));
        assert!(!volume_safe(r"C:\src:/c"));
        assert!(volume_safe(r"C:\src:/c:ro"));
        assert!(!volume_safe("~/x:/c"));
    }
}
