//! The table of SecLang directives and the shape of their arguments.

/// What arguments a directive takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `SecRule TARGETS OPERATOR [ACTIONS]`.
    Rule,
    /// `SecAction ACTIONS`.
    Action,
    /// `SecMarker NAME`.
    Marker,
    /// `SecDefaultAction ACTIONS`.
    DefaultAction,
    /// `SecRuleRemoveById ID...`.
    RemoveById,
    /// `SecRuleRemoveByTag|ByMsg TEXT`.
    RemoveByText,
    /// `SecRuleUpdateTargetById|ByTag|ByMsg SELECTOR TARGETS [REPLACED]`.
    UpdateTarget,
    /// `SecRuleUpdateActionById ID[:N] ACTIONS`.
    UpdateAction,
    /// `Include PATH-OR-GLOB`.
    Include,
    /// `SecRemoteRules KEY URL`: refused.
    Remote,
    /// `On` or `Off`.
    OnOff,
    /// One word of a fixed set.
    Word(&'static [&'static str]),
    /// A non-negative integer.
    Number,
    /// One free argument.
    Text,
    /// No argument.
    NoArg,
    /// One or more free arguments.
    List,
    /// Understood, but refused with the given reason.
    Refused(&'static str),
}

/// Every directive of the ModSecurity v3 reference manual (and `Include`).
pub const DIRECTIVES: &[(&str, Shape)] = {
    use Shape::*;
    &[
        ("Include", Include),
        ("SecAction", Action),
        ("SecArgumentSeparator", Text),
        ("SecArgumentsLimit", Number),
        ("SecAuditEngine", Word(&["On", "Off", "RelevantOnly"])),
        ("SecAuditLog", Text),
        ("SecAuditLog2", Text),
        ("SecAuditLogDirMode", Text),
        ("SecAuditLogFileMode", Text),
        ("SecAuditLogFormat", Word(&["JSON", "Native"])),
        ("SecAuditLogParts", Text),
        ("SecAuditLogRelevantStatus", Text),
        ("SecAuditLogStorageDir", Text),
        ("SecAuditLogType", Word(&["Serial", "Concurrent", "HTTPS"])),
        ("SecCollectionTimeout", Number),
        ("SecComponentSignature", Text),
        ("SecConnEngine", Word(&["On", "Off", "DetectionOnly"])),
        ("SecContentInjection", OnOff),
        ("SecCookieFormat", Word(&["0", "1"])),
        ("SecCookieV0Separator", Text),
        ("SecDataDir", Text),
        ("SecDebugLog", Text),
        ("SecDebugLogLevel", Number),
        ("SecDefaultAction", DefaultAction),
        ("SecDisableBackendCompression", OnOff),
        ("SecGeoLookupDb", Text),
        ("SecGsbLookupDb", Text),
        ("SecGuardianLog", Text),
        ("SecHashEngine", OnOff),
        ("SecHashKey", List),
        ("SecHashMethodPm", List),
        ("SecHashMethodRx", List),
        ("SecHashParam", Text),
        ("SecHttpBlKey", Text),
        ("SecInterceptOnError", OnOff),
        ("SecMarker", Marker),
        ("SecParseXmlIntoArgs", Word(&["On", "Off", "OnlyArgs"])),
        ("SecPcreMatchLimit", Number),
        ("SecPcreMatchLimitRecursion", Number),
        ("SecReadStateLimit", Number),
        ("SecRemoteRules", Remote),
        ("SecRemoteRulesFailAction", Word(&["Abort", "Warn"])),
        ("SecRequestBodyAccess", OnOff),
        ("SecRequestBodyInMemoryLimit", Number),
        ("SecRequestBodyJsonDepthLimit", Number),
        ("SecRequestBodyLimit", Number),
        (
            "SecRequestBodyLimitAction",
            Word(&["Reject", "ProcessPartial"]),
        ),
        ("SecRequestBodyNoFilesLimit", Number),
        ("SecResponseBodyAccess", OnOff),
        ("SecResponseBodyLimit", Number),
        (
            "SecResponseBodyLimitAction",
            Word(&["Reject", "ProcessPartial"]),
        ),
        ("SecResponseBodyMimeType", List),
        ("SecResponseBodyMimeTypesClear", NoArg),
        ("SecRule", Rule),
        ("SecRuleEngine", Word(&["On", "Off", "DetectionOnly"])),
        ("SecRuleInheritance", OnOff),
        ("SecRulePerfTime", Number),
        ("SecRuleRemoveById", RemoveById),
        ("SecRuleRemoveByMsg", RemoveByText),
        ("SecRuleRemoveByTag", RemoveByText),
        (
            "SecRuleScript",
            Refused("SecRuleScript needs a Lua interpreter, which Palisade does not embed"),
        ),
        ("SecRuleUpdateActionById", UpdateAction),
        ("SecRuleUpdateTargetById", UpdateTarget),
        ("SecRuleUpdateTargetByMsg", UpdateTarget),
        ("SecRuleUpdateTargetByTag", UpdateTarget),
        ("SecSensorId", Text),
        ("SecServerSignature", Text),
        ("SecStatusEngine", OnOff),
        ("SecStreamInBodyInspection", OnOff),
        ("SecStreamOutBodyInspection", OnOff),
        ("SecTmpDir", Text),
        ("SecTmpSaveUploadedFiles", OnOff),
        ("SecUnicodeCodePage", Number),
        ("SecUnicodeMapFile", List),
        ("SecUploadDir", Text),
        ("SecUploadFileLimit", Number),
        ("SecUploadFileMode", Text),
        ("SecUploadKeepFiles", Word(&["On", "Off", "RelevantOnly"])),
        ("SecWebAppId", Text),
        ("SecWriteStateLimit", Number),
        ("SecXmlExternalEntity", OnOff),
    ]
};

/// Looks a directive up by name, ignoring ASCII case.
pub fn lookup(name: &str) -> Option<(&'static str, Shape)> {
    DIRECTIVES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .copied()
}
