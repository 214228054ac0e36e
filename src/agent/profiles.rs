//! Env profiles: named sets of environment variables (endpoint, credential) a run can be started
//! with (`envProfileId`). Fail closed: an id that matches no profile is an error before anything
//! is spawned; a file that group or others can read, or that another user owns, is refused; the
//! values never appear in a message, a result or an event ([`Secrets`] scrubs them).
//!
//! File: `SESSION_LOCK_ENV_PROFILES`, else `<state home>/env-profiles.json`:
//!
//! ```json
//! {"profiles": [{"id": "work", "description": "team gateway",
//!                "env": {"ANTHROPIC_BASE_URL": "https://gw.example", "ANTHROPIC_API_KEY": "..."}}]}
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Overrides the profile file's place.
pub const PROFILES_ENV: &str = "SESSION_LOCK_ENV_PROFILES";
/// The file name under the state home.
pub const PROFILES_FILE: &str = "env-profiles.json";
/// The largest profile file read.
const MAX_FILE: u64 = 1024 * 1024;
/// Values shorter than this are not scrubbed from output (they would hit ordinary words).
pub const MIN_SECRET_LEN: usize = 8;

/// Inherited variables a profile replaces: any of them left in place could send the profile's
/// endpoint another account's credential, or the other way round.
pub fn replaced_by_profile(key: &str) -> bool {
    key.starts_with("ANTHROPIC_")
        || matches!(
            key,
            "CLAUDE_CODE_OAUTH_TOKEN" | "CLAUDE_CODE_USE_BEDROCK" | "CLAUDE_CODE_USE_VERTEX"
        )
}

/// One profile. `Debug` shows the variable names, never their values.
#[derive(Clone, PartialEq, Eq)]
pub struct Profile {
    pub id: String,
    env: Vec<(String, String)>,
}

impl std::fmt::Debug for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Profile")
            .field("id", &self.id)
            .field("env", &keys)
            .finish()
    }
}

impl Profile {
    /// The variables to set on the CLI.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// What must never be shown.
    pub fn secrets(&self) -> Secrets {
        Secrets {
            values: self
                .env
                .iter()
                .map(|(_, v)| v.clone())
                .filter(|v| v.len() >= MIN_SECRET_LEN)
                .collect(),
        }
    }
}

/// Values scrubbed from everything run-agent writes.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    values: Vec<String>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} values)", self.values.len())
    }
}

/// What a scrubbed value is replaced with.
pub const REDACTED: &str = "[redacted]";

impl Secrets {
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every secret value replaced.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), REDACTED);
            }
        }
        out
    }

    /// Every string in `value` (keys too) scrubbed.
    pub fn scrub_json(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => *s = self.scrub(s),
            Value::Array(items) => items.iter_mut().for_each(|i| self.scrub_json(i)),
            Value::Object(map) => {
                let entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
                for (k, mut v) in entries {
                    self.scrub_json(&mut v);
                    map.insert(self.scrub(&k), v);
                }
            }
            _ => {}
        }
    }
}

/// Why no profile could be used. Messages name the id and the file, never a value.
#[derive(Debug, PartialEq, Eq)]
pub enum ProfileError {
    /// No state home to look in (no `HOME`) and no override.
    NoPlace,
    /// The file does not exist.
    NoFile(PathBuf),
    /// The file could not be read.
    Io(PathBuf, std::io::ErrorKind),
    /// Group or others may read or write it (`mode` is the permission bits).
    Exposed(PathBuf, u32),
    /// Another user owns it.
    NotOwned(PathBuf),
    /// Not the expected shape; `at` is where (a key path or line/column).
    Invalid(PathBuf, String),
    /// No profile with this id.
    Unknown { id: String, path: PathBuf },
}

impl std::fmt::Display for ProfileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProfileError::NoPlace => write!(
                f,
                "no env profile file: no state home (set {PROFILES_ENV} or HOME)"
            ),
            ProfileError::NoFile(p) => write!(f, "no env profile file at {}", p.display()),
            ProfileError::Io(p, kind) => {
                write!(f, "cannot read env profile file {}: {kind}", p.display())
            }
            ProfileError::Exposed(p, mode) => write!(
                f,
                "env profile file {} is readable by others (mode {mode:o}); run chmod 600 on it",
                p.display()
            ),
            ProfileError::NotOwned(p) => write!(
                f,
                "env profile file {} belongs to another user; refused",
                p.display()
            ),
            ProfileError::Invalid(p, at) => {
                write!(f, "env profile file {} is invalid: {at}", p.display())
            }
            ProfileError::Unknown { id, path } => {
                write!(f, "no env profile '{id}' in {}", path.display())
            }
        }
    }
}

impl std::error::Error for ProfileError {}

impl ProfileError {
    /// How the run fails: a missing id or file is "not found", an unsafe file is refused.
    pub fn failure(&self) -> super::options::Failure {
        use super::options::Failure;
        match self {
            ProfileError::Exposed(..) | ProfileError::NotOwned(_) => Failure::Refused,
            ProfileError::Invalid(..) => Failure::Usage,
            ProfileError::Io(..) => Failure::Spawn,
            ProfileError::NoPlace | ProfileError::NoFile(_) | ProfileError::Unknown { .. } => {
                Failure::NotFound
            }
        }
    }
}

/// The key path of `field` under `path` as serde_path_to_error gives it (which may already end
/// with the field, or with `?` standing for it).
fn join_key(path: &str, field: &str) -> String {
    let parent = path.strip_suffix('?').unwrap_or(path).trim_end_matches('.');
    if parent == field || parent.ends_with(&format!(".{field}")) {
        parent.to_string()
    } else if parent.is_empty() {
        field.to_string()
    } else {
        format!("{parent}.{field}")
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileShape {
    profiles: Vec<EntryShape>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryShape {
    id: String,
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

/// Where the profile file is.
pub fn profiles_path() -> Result<PathBuf, ProfileError> {
    if let Some(p) = std::env::var_os(PROFILES_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    crate::sessions::state_home()
        .map(|h| h.join(PROFILES_FILE))
        .ok_or(ProfileError::NoPlace)
}

#[cfg(unix)]
fn check_owner_and_mode(path: &Path, meta: &std::fs::Metadata) -> Result<(), ProfileError> {
    use std::os::unix::fs::MetadataExt;
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(ProfileError::Exposed(path.to_path_buf(), mode));
    }
    if meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(ProfileError::NotOwned(path.to_path_buf()));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_owner_and_mode(_path: &Path, _meta: &std::fs::Metadata) -> Result<(), ProfileError> {
    // Windows: the file sits in the user's own profile folder; ACLs are not inspected.
    Ok(())
}

/// Reads every profile of the file at `path` (permissions checked on the open handle).
pub fn load(path: &Path) -> Result<Vec<Profile>, ProfileError> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ProfileError::NoFile(path.to_path_buf()));
        }
        Err(e) => return Err(ProfileError::Io(path.to_path_buf(), e.kind())),
    };
    let meta = file
        .metadata()
        .map_err(|e| ProfileError::Io(path.to_path_buf(), e.kind()))?;
    if !meta.is_file() {
        return Err(ProfileError::Invalid(
            path.to_path_buf(),
            "not a file".into(),
        ));
    }
    check_owner_and_mode(path, &meta)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ProfileError::Io(path.to_path_buf(), e.kind()))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(ProfileError::Invalid(
            path.to_path_buf(),
            "over 1 MiB".into(),
        ));
    }
    // serde's messages can quote the offending value: report only where it is.
    let mut de = serde_json::Deserializer::from_slice(&bytes);
    let shape: FileShape = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let inner = e.inner();
        // serde names an unknown or missing field (never a value) between backticks.
        let message = inner.to_string();
        let field = message.split('`').nth(1).unwrap_or("?");
        let key = e.path().to_string();
        let at = if message.starts_with("unknown field") {
            format!("key '{}' is not known", join_key(&key, field))
        } else if message.starts_with("missing field") {
            format!("key '{}' is missing", join_key(&key, field))
        } else if key.is_empty() || key == "." {
            format!("line {} column {}", inner.line(), inner.column())
        } else {
            format!("key '{key}'")
        };
        ProfileError::Invalid(path.to_path_buf(), at)
    })?;
    let mut out = Vec::new();
    for (i, entry) in shape.profiles.into_iter().enumerate() {
        let id = entry.id.trim().to_string();
        if id.is_empty() {
            return Err(ProfileError::Invalid(
                path.to_path_buf(),
                format!("key 'profiles[{i}].id' is blank"),
            ));
        }
        for (k, v) in &entry.env {
            let bad_key = k.is_empty() || k.contains('=') || k.contains('\0');
            if bad_key || v.contains('\0') {
                return Err(ProfileError::Invalid(
                    path.to_path_buf(),
                    format!(
                        "key 'profiles[{i}].env': variable '{}' is not usable",
                        k.replace('\0', "")
                    ),
                ));
            }
        }
        out.push(Profile {
            id,
            env: entry.env.into_iter().collect(),
        });
    }
    Ok(out)
}

/// The profile named `id` (trimmed) in the file at `path`.
pub fn find_in(path: &Path, id: &str) -> Result<Profile, ProfileError> {
    let id = id.trim();
    load(path)?
        .into_iter()
        .find(|p| p.id == id)
        .ok_or_else(|| ProfileError::Unknown {
            id: id.to_string(),
            path: path.to_path_buf(),
        })
}

/// The profile named `id`, from the usual file.
pub fn find(id: &str) -> Result<Profile, ProfileError> {
    find_in(&profiles_path()?, id)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-test-SECRET-0123456789";

    fn write(dir: &Path, text: &str, mode: u32) -> PathBuf {
        let p = dir.join("env-profiles.json");
        std::fs::write(&p, text).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let _ = mode;
        p
    }

    fn good() -> String {
        serde_json::json!({"profiles": [
            {"id": "work", "description": "gateway", "env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": KEY, "SHORT": "1"}},
            {"id": "home", "env": {}}
        ]})
        .to_string()
    }

    #[test]
    fn finds_by_id_trimmed_and_refuses_unknown_ids() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), &good(), 0o600);
        let work = find_in(&p, " work ").unwrap();
        assert_eq!(work.id, "work");
        assert_eq!(work.env().len(), 3);
        let e = find_in(&p, "wrok").unwrap_err();
        assert_eq!(
            e,
            ProfileError::Unknown {
                id: "wrok".into(),
                path: p.clone()
            }
        );
        assert_eq!(e.failure(), super::super::options::Failure::NotFound);
        assert!(matches!(
            find_in(&dir.path().join("none.json"), "work"),
            Err(ProfileError::NoFile(_))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_file_others_can_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for mode in [0o644, 0o640, 0o604, 0o660, 0o602] {
            let p = write(dir.path(), &good(), mode);
            let e = find_in(&p, "work").unwrap_err();
            assert_eq!(e, ProfileError::Exposed(p.clone(), mode), "{mode:o}");
            assert_eq!(e.failure(), super::super::options::Failure::Refused);
            assert!(e.to_string().contains("chmod 600"));
        }
        let p = write(dir.path(), &good(), 0o400);
        assert!(find_in(&p, "work").is_ok());
    }

    #[test]
    fn secrets_never_show_in_errors_debug_or_output() {
        let dir = tempfile::tempdir().unwrap();
        // A wrong type right on the credential: serde would quote it; we must not.
        let bad =
            format!(r#"{{"profiles":[{{"id":"work","env":{{"ANTHROPIC_API_KEY":["{KEY}"]}}}}]}}"#);
        let p = write(dir.path(), &bad, 0o600);
        let e = find_in(&p, "work").unwrap_err();
        assert!(matches!(e, ProfileError::Invalid(..)));
        assert!(!e.to_string().contains(KEY), "{e}");
        assert!(
            e.to_string().contains("profiles[0].env.ANTHROPIC_API_KEY"),
            "{e}"
        );
        let broken = format!(r#"{{"profiles":[{{"id":"work","env":{{"K":"{KEY}"#);
        let p = write(dir.path(), &broken, 0o600);
        let e = find_in(&p, "work").unwrap_err();
        assert!(!e.to_string().contains(KEY), "{e}");
        let p = write(dir.path(), &good(), 0o600);
        let work = find_in(&p, "work").unwrap();
        assert!(!format!("{work:?}").contains(KEY));
        let s = work.secrets();
        assert!(!format!("{s:?}").contains(KEY));
        let scrubbed = s.scrub(&format!("key={KEY} url=http://127.0.0.1:9 n=1"));
        assert_eq!(scrubbed, "key=[redacted] url=[redacted] n=1");
        let mut v = serde_json::json!({"a": [KEY], KEY: {"b": format!("x{KEY}x")}});
        s.scrub_json(&mut v);
        assert!(!v.to_string().contains(KEY), "{v}");
    }

    #[test]
    fn shape_errors_name_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), r#"{"profiles":[{"id":"  ","env":{}}]}"#, 0o600);
        assert!(
            find_in(&p, "x")
                .unwrap_err()
                .to_string()
                .contains("profiles[0].id")
        );
        let p = write(
            dir.path(),
            r#"{"profiles":[{"id":"a","enviroment":{}}]}"#,
            0o600,
        );
        assert!(
            find_in(&p, "a")
                .unwrap_err()
                .to_string()
                .contains("profiles[0]")
        );
        let p = write(
            dir.path(),
            r#"{"profiles":[{"id":"a","env":{"A=B":"x"}}]}"#,
            0o600,
        );
        assert!(find_in(&p, "a").unwrap_err().to_string().contains("'A=B'"));
    }

    #[test]
    fn what_a_profile_replaces() {
        for k in [
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
        ] {
            assert!(replaced_by_profile(k), "{k}");
        }
        for k in ["PATH", "HOME", "CLAUDE_CONFIG_DIR"] {
            assert!(!replaced_by_profile(k), "{k}");
        }
    }

    #[test]
    fn unknown_and_missing_fields_are_named_with_their_index() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                r#"{"profiles":[{"id":"a","env":{}},{"id":"b","envv":{}}]}"#,
                "key 'profiles[1].envv' is not known",
            ),
            (
                r#"{"profiles":[{"env":{}}]}"#,
                "key 'profiles[0].id' is missing",
            ),
            (r#"{"profile":[]}"#, "key 'profile' is not known"),
            (r#"{}"#, "key 'profiles' is missing"),
        ];
        for (text, want) in cases {
            let p = write(dir.path(), text, 0o600);
            let e = find_in(&p, "a").unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
            assert!(!e.contains(".?"), "{e}");
        }
    }
}
