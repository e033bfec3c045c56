//! The setters every backend's config has, one per field, so that a `#[non_exhaustive]`
//! config is built the same way on every backend: `Config::new(..).field(value)...`.

/// Setters for a config's fields: `config.field(value)` sets the field and returns the
/// config. Fields under `set` take their type (so that a number literal is typed by the
/// field); fields under `into` anything `Into` their type (text, paths); fields under `some`
/// are `Option`s and take anything `Into` their inner value.
///
/// ```
/// # use std::time::Duration;
/// #[non_exhaustive]
/// #[derive(Default)]
/// pub struct Config {
///     /// How long to wait.
///     pub timeout: Duration,
///     /// Who.
///     pub user: Option<String>,
/// }
/// keyplane_contract::config_setters!(Config {
///     set { timeout: Duration }
///     into {}
///     some { user: String }
/// });
/// let config = Config::default().timeout(Duration::from_secs(2)).user("app");
/// assert_eq!(config.user.as_deref(), Some("app"));
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! config_setters {
    ($config:ty {
        set { $($field:ident: $ty:ty),* $(,)? }
        into { $($text:ident: $text_ty:ty),* $(,)? }
        $(some { $($opt:ident: $opt_ty:ty),* $(,)? })?
    }) => {
        impl $config {
            $(
                #[doc = concat!("Sets [`", stringify!($field), "`](Self::", stringify!($field), ").")]
                #[must_use]
                pub fn $field(mut self, value: $ty) -> Self {
                    self.$field = value;
                    self
                }
            )*
            $(
                #[doc = concat!("Sets [`", stringify!($text), "`](Self::", stringify!($text), ").")]
                #[must_use]
                pub fn $text(mut self, value: impl Into<$text_ty>) -> Self {
                    self.$text = value.into();
                    self
                }
            )*
            $($(
                #[doc = concat!("Sets [`", stringify!($opt), "`](Self::", stringify!($opt), ").")]
                #[must_use]
                pub fn $opt(mut self, value: impl Into<$opt_ty>) -> Self {
                    self.$opt = Some(value.into());
                    self
                }
            )*)?
        }
    };
}
