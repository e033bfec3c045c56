//! An example schema written by hand against the keyspace traits (no derive): the seed
//! layouts of a tenant config store, a service registry, a Redis provider map and a job log.

use keyplane_core::keyspace::{
    FieldInfo, HostPort, Key, KeyError, Keyspace, ListPrefix, NamingRule, NoMatch, Padded, Prefix,
    Template, TemplateInfo, Text, decode_field,
};
use std::sync::LazyLock;
use uuid::Uuid;

keyplane_core::text_segment!(
    /// A service name as existing programs wrote it: any text, percent-escaped.
    pub ServiceName, max_len = 128, policy = Escape
);
keyplane_core::text_segment!(
    /// A registry group such as `prod-east`.
    pub GroupName, charset = "[a-z0-9_-]", max_len = 64, policy = Reject
);
keyplane_core::text_segment!(
    /// A realm of the provider map.
    pub Realm, charset = "[a-z0-9_]", max_len = 32, policy = Reject
);
keyplane_core::text_segment!(
    /// A provider such as `openai` or `azure.east`.
    pub Provider, charset = "[a-z0-9_.-]", max_len = 32, policy = Reject
);

/// Builds a `&'static Template` once per call site.
macro_rules! template {
    (key $source:expr, $tag:expr) => {{
        static T: LazyLock<Template> = LazyLock::new(|| Template::key($source, $tag).unwrap());
        &T
    }};
    (prefix $source:expr) => {{
        static T: LazyLock<Template> = LazyLock::new(|| Template::prefix($source, None).unwrap());
        &T
    }};
}

/// `jxt/tenants/{id}/meta`
#[derive(Debug, Clone, PartialEq)]
pub struct TenantMetaKey {
    pub id: u64,
}

impl Key for TenantMetaKey {
    const TEMPLATE: &'static str = "jxt/tenants/{id}/meta";
    type Value = Text;
    fn template() -> &'static Template {
        template!(key TenantMetaKey::TEMPLATE, None)
    }
    fn write(&self, out: &mut String) {
        Self::template().write(out, &[&self.id]);
    }
    fn parse(raw: &str) -> Result<Self, KeyError> {
        let t = Self::template();
        let [id] = t.captures(raw)?;
        Ok(TenantMetaKey {
            id: decode_field(t, raw, 2, "id", id)?,
        })
    }
    fn fields(&self) -> Vec<(&'static str, String)> {
        vec![("id", self.id.to_string())]
    }
    fn field_infos() -> Vec<FieldInfo> {
        vec![FieldInfo::of::<u64>("id")]
    }
}

/// `jxt/tenants/{id}/database/{service}`
#[derive(Debug, Clone, PartialEq)]
pub struct TenantDatabaseKey {
    pub id: u64,
    pub service: ServiceName,
}

impl Key for TenantDatabaseKey {
    const TEMPLATE: &'static str = "jxt/tenants/{id}/database/{service}";
    type Value = Text;
    fn template() -> &'static Template {
        template!(key TenantDatabaseKey::TEMPLATE, None)
    }
    fn write(&self, out: &mut String) {
        // Written segment by segment, as generated code does: no allocation beyond `out`.
        use keyplane_core::keyspace::{Segment, Separator};
        out.push_str("jxt/tenants/");
        self.id.encode(Separator::Slash, out);
        out.push_str("/database/");
        self.service.encode(Separator::Slash, out);
    }
    fn parse(raw: &str) -> Result<Self, KeyError> {
        let t = Self::template();
        let [id, service] = t.captures(raw)?;
        Ok(TenantDatabaseKey {
            id: decode_field(t, raw, 2, "id", id)?,
            service: decode_field(t, raw, 4, "service", service)?,
        })
    }
    fn fields(&self) -> Vec<(&'static str, String)> {
        use keyplane_core::keyspace::{Segment, Separator};
        vec![
            ("id", self.id.to_segment_string(Separator::Slash)),
            ("service", self.service.to_segment_string(Separator::Slash)),
        ]
    }
    fn field_infos() -> Vec<FieldInfo> {
        vec![
            FieldInfo::of::<u64>("id"),
            FieldInfo::of::<ServiceName>("service"),
        ]
    }
}

/// `jxt/tenants/{id}/database/`, listing [`TenantDatabaseKey`]s.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantDatabasesPrefix {
    pub id: u64,
}

impl ListPrefix for TenantDatabasesPrefix {
    type Key = TenantDatabaseKey;
}

impl Prefix for TenantDatabasesPrefix {
    const TEMPLATE: &'static str = "jxt/tenants/{id}/database/";
    fn template() -> &'static Template {
        template!(prefix TenantDatabasesPrefix::TEMPLATE)
    }
    fn write(&self, out: &mut String) {
        Self::template().write(out, &[&self.id]);
    }
    fn parse(raw: &str) -> Result<Self, KeyError> {
        let t = Self::template();
        let [id] = t.captures(raw)?;
        Ok(TenantDatabasesPrefix {
            id: decode_field(t, raw, 2, "id", id)?,
        })
    }
    fn fields(&self) -> Vec<(&'static str, String)> {
        vec![("id", self.id.to_string())]
    }
}

/// `/registry/{group}/{service}/{addr}/status`
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceStatusKey {
    pub group: GroupName,
    pub service: ServiceName,
    pub addr: HostPort,
}

impl Key for InstanceStatusKey {
    const TEMPLATE: &'static str = "/registry/{group}/{service}/{addr}/status";
    type Value = Text;
    fn template() -> &'static Template {
        template!(key InstanceStatusKey::TEMPLATE, None)
    }
    fn write(&self, out: &mut String) {
        Self::template().write(out, &[&self.group, &self.service, &self.addr]);
    }
    fn parse(raw: &str) -> Result<Self, KeyError> {
        let t = Self::template();
        let [group, service, addr] = t.captures(raw)?;
        Ok(InstanceStatusKey {
            group: decode_field(t, raw, 1, "group", group)?,
            service: decode_field(t, raw, 2, "service", service)?,
            addr: decode_field(t, raw, 3, "addr", addr)?,
        })
    }
    fn fields(&self) -> Vec<(&'static str, String)> {
        use keyplane_core::keyspace::{Segment, Separator};
        vec![
            ("group", self.group.to_string()),
            ("service", self.service.to_segment_string(Separator::Slash)),
            ("addr", self.addr.to_string()),
        ]
    }
    fn field_infos() -> Vec<FieldInfo> {
        vec![
            FieldInfo::of::<GroupName>("group"),
            FieldInfo::of::<ServiceName>("service"),
            FieldInfo::of::<HostPort>("addr"),
        ]
    }
}

/// `nxc:map:{realm}:{provider}`, hash-tagged on the realm: `nxc:map:{prod}:openai`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderMapKey {
    pub realm: Realm,
    pub provider: Provider,
}

impl Key for ProviderMapKey {
    const TEMPLATE: &'static str = "nxc:map:{realm}:{provider}";
    const HASH_TAG: Option<&'static str> = Some("realm");
    type Value = Text;
    fn template() -> &'static Template {
        template!(key ProviderMapKey::TEMPLATE, ProviderMapKey::HASH_TAG)
    }
    fn write(&self, out: &mut String) {
        Self::template().write(out, &[&self.realm, &self.provider]);
    }
    fn parse(raw: &str) -> Result<Self, KeyError> {
        let t = Self::template();
        let [realm, provider] = t.captures(raw)?;
        Ok(ProviderMapKey {
            realm: decode_field(t, raw, 2, "realm", realm)?,
            provider: decode_field(t, raw, 3, "provider", provider)?,
        })
    }
    fn fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("realm", self.realm.to_string()),
            ("provider", self.provider.to_string()),
        ]
    }
    fn field_infos() -> Vec<FieldInfo> {
        vec![
            FieldInfo::of::<Realm>("realm"),
            FieldInfo::of::<Provider>("provider"),
        ]
    }
}

/// `cronix/jobs/{job}/runs/{seq}`: ordered by job, then run number.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct JobRunKey {
    pub job: Uuid,
    pub seq: Padded<10, u64>,
}

impl Key for JobRunKey {
    const TEMPLATE: &'static str = "cronix/jobs/{job}/runs/{seq}";
    type Value = Text;
    fn template() -> &'static Template {
        template!(key JobRunKey::TEMPLATE, None)
    }
    fn write(&self, out: &mut String) {
        Self::template().write(out, &[&self.job, &self.seq]);
    }
    fn parse(raw: &str) -> Result<Self, KeyError> {
        let t = Self::template();
        let [job, seq] = t.captures(raw)?;
        Ok(JobRunKey {
            job: decode_field(t, raw, 2, "job", job)?,
            seq: decode_field(t, raw, 4, "seq", seq)?,
        })
    }
    fn fields(&self) -> Vec<(&'static str, String)> {
        use keyplane_core::keyspace::{Segment, Separator};
        vec![
            ("job", self.job.to_segment_string(Separator::Slash)),
            ("seq", self.seq.to_segment_string(Separator::Slash)),
        ]
    }
    fn field_infos() -> Vec<FieldInfo> {
        vec![
            FieldInfo::of::<Uuid>("job"),
            FieldInfo::of::<Padded<10, u64>>("seq"),
        ]
    }
}

/// Every key of the example schema.
#[derive(Debug, Clone, PartialEq)]
pub enum ExampleKey {
    Meta(TenantMetaKey),
    Database(TenantDatabaseKey),
    Status(InstanceStatusKey),
    ProviderMap(ProviderMapKey),
    JobRun(JobRunKey),
}

impl Keyspace for ExampleKey {
    fn parse(raw: &str) -> Result<Self, NoMatch> {
        let mut attempts = Vec::new();
        match TenantMetaKey::parse(raw) {
            Ok(k) => return Ok(ExampleKey::Meta(k)),
            Err(e) => attempts.push(e),
        }
        match TenantDatabaseKey::parse(raw) {
            Ok(k) => return Ok(ExampleKey::Database(k)),
            Err(e) => attempts.push(e),
        }
        match InstanceStatusKey::parse(raw) {
            Ok(k) => return Ok(ExampleKey::Status(k)),
            Err(e) => attempts.push(e),
        }
        match ProviderMapKey::parse(raw) {
            Ok(k) => return Ok(ExampleKey::ProviderMap(k)),
            Err(e) => attempts.push(e),
        }
        match JobRunKey::parse(raw) {
            Ok(k) => return Ok(ExampleKey::JobRun(k)),
            Err(e) => attempts.push(e),
        }
        Err(NoMatch::from_attempts(raw, attempts))
    }

    fn write(&self, out: &mut String) {
        match self {
            ExampleKey::Meta(k) => k.write(out),
            ExampleKey::Database(k) => k.write(out),
            ExampleKey::Status(k) => k.write(out),
            ExampleKey::ProviderMap(k) => k.write(out),
            ExampleKey::JobRun(k) => k.write(out),
        }
    }

    fn template_source(&self) -> &'static str {
        match self {
            ExampleKey::Meta(_) => TenantMetaKey::TEMPLATE,
            ExampleKey::Database(_) => TenantDatabaseKey::TEMPLATE,
            ExampleKey::Status(_) => InstanceStatusKey::TEMPLATE,
            ExampleKey::ProviderMap(_) => ProviderMapKey::TEMPLATE,
            ExampleKey::JobRun(_) => JobRunKey::TEMPLATE,
        }
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        match self {
            ExampleKey::Meta(k) => k.fields(),
            ExampleKey::Database(k) => k.fields(),
            ExampleKey::Status(k) => k.fields(),
            ExampleKey::ProviderMap(k) => k.fields(),
            ExampleKey::JobRun(k) => k.fields(),
        }
    }

    fn templates() -> Vec<TemplateInfo> {
        vec![
            TenantMetaKey::info(),
            TenantDatabaseKey::info(),
            InstanceStatusKey::info(),
            ProviderMapKey::info(),
            JobRunKey::info(),
        ]
    }

    fn naming_rule() -> Option<NamingRule> {
        NamingRule::charset("[a-z0-9_]").ok()
    }
}

#[cfg(feature = "proptest")]
mod strategies {
    use super::*;
    use keyplane_core::keyspace::{KeyStrategy, KeyspaceStrategy, PrefixStrategy, segment};
    use proptest::prelude::*;

    impl KeyStrategy for TenantMetaKey {
        fn strategy() -> BoxedStrategy<Self> {
            segment::<u64>().prop_map(|id| TenantMetaKey { id }).boxed()
        }
    }

    impl KeyStrategy for TenantDatabaseKey {
        fn strategy() -> BoxedStrategy<Self> {
            (segment::<u64>(), segment::<ServiceName>())
                .prop_map(|(id, service)| TenantDatabaseKey { id, service })
                .boxed()
        }
    }

    impl PrefixStrategy for TenantDatabasesPrefix {
        fn strategy() -> BoxedStrategy<Self> {
            segment::<u64>()
                .prop_map(|id| TenantDatabasesPrefix { id })
                .boxed()
        }
    }

    impl KeyStrategy for InstanceStatusKey {
        fn strategy() -> BoxedStrategy<Self> {
            (
                segment::<GroupName>(),
                segment::<ServiceName>(),
                segment::<HostPort>(),
            )
                .prop_map(|(group, service, addr)| InstanceStatusKey {
                    group,
                    service,
                    addr,
                })
                .boxed()
        }
    }

    impl KeyStrategy for ProviderMapKey {
        fn strategy() -> BoxedStrategy<Self> {
            (segment::<Realm>(), segment::<Provider>())
                .prop_map(|(realm, provider)| ProviderMapKey { realm, provider })
                .boxed()
        }
    }

    impl KeyStrategy for JobRunKey {
        fn strategy() -> BoxedStrategy<Self> {
            (segment::<Uuid>(), segment::<Padded<10, u64>>())
                .prop_map(|(job, seq)| JobRunKey { job, seq })
                .boxed()
        }
    }

    impl KeyspaceStrategy for ExampleKey {
        fn strategy() -> BoxedStrategy<Self> {
            prop_oneof![
                TenantMetaKey::strategy().prop_map(ExampleKey::Meta),
                TenantDatabaseKey::strategy().prop_map(ExampleKey::Database),
                InstanceStatusKey::strategy().prop_map(ExampleKey::Status),
                ProviderMapKey::strategy().prop_map(ExampleKey::ProviderMap),
                JobRunKey::strategy().prop_map(ExampleKey::JobRun),
            ]
            .boxed()
        }
    }
}
