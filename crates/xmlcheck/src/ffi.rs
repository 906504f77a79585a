//! The libxml2 declarations this crate uses, written by hand from the 2.9 headers
//! (`parser.h`, `tree.h`, `valid.h`, `xmlschemas.h`, `xmlschemastypes.h`,
//! `xmlerror.h`, `xmlIO.h`, `globals.h`); their ABI has been stable across 2.9 - 2.13. Only this module
//! names libxml2 symbols; the rest of the crate wraps them.
//!
//! Every pointer type libxml2 hands out is opaque here: the crate never reads a
//! libxml2 structure except [`XmlError`], which libxml2 passes to the error
//! handler and whose layout is part of its public ABI.

#![allow(non_camel_case_types)] // names follow the C headers

use std::ffi::{c_char, c_int, c_void};
use std::marker::{PhantomData, PhantomPinned};

/// Declares an opaque C type (only ever used behind a pointer).
macro_rules! opaque {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[repr(C)]
        pub(crate) struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}

opaque! {
    /// `xmlDoc`: a parsed document.
    xmlDoc;
    /// `xmlDtd`: a parsed DTD.
    xmlDtd;
    /// `xmlValidCtxt`: DTD validation state.
    xmlValidCtxt;
    /// `xmlSchema`: a compiled XML Schema.
    xmlSchema;
    /// `xmlSchemaParserCtxt`: XML Schema compiler state.
    xmlSchemaParserCtxt;
    /// `xmlSchemaValidCtxt`: XML Schema validation state.
    xmlSchemaValidCtxt;
    /// `xmlParserCtxt`: parser state (only passed through to the entity loader).
    xmlParserCtxt;
    /// `xmlParserInput`: an input source (only returned by the entity loader).
    xmlParserInput;
}

/// `xmlError` (`xmlerror.h`), as passed to a structured error handler.
#[repr(C)]
pub(crate) struct XmlError {
    pub domain: c_int,
    pub code: c_int,
    pub message: *mut c_char,
    pub level: c_int,
    pub file: *mut c_char,
    pub line: c_int,
    pub str1: *mut c_char,
    pub str2: *mut c_char,
    pub str3: *mut c_char,
    pub int1: c_int,
    /// The column, when known.
    pub int2: c_int,
    pub ctxt: *mut c_void,
    pub node: *mut c_void,
}

/// `xmlErrorLevel`: `XML_ERR_WARNING`.
pub(crate) const XML_ERR_WARNING: c_int = 1;

/// `xmlStructuredErrorFunc`.
pub(crate) type xmlStructuredErrorFunc =
    Option<unsafe extern "C" fn(user_data: *mut c_void, error: *mut XmlError)>;

/// `xmlExternalEntityLoader`.
pub(crate) type xmlExternalEntityLoader = Option<
    unsafe extern "C" fn(
        url: *const c_char,
        id: *const c_char,
        context: *mut xmlParserCtxt,
    ) -> *mut xmlParserInput,
>;

/// `xmlParserOption`: forbid network access.
pub(crate) const XML_PARSE_NONET: c_int = 1 << 11;
/// `xmlParserOption`: suppress error reports.
pub(crate) const XML_PARSE_NOERROR: c_int = 1 << 5;
/// `xmlParserOption`: suppress warning reports.
pub(crate) const XML_PARSE_NOWARNING: c_int = 1 << 6;

// Linked by build.rs (pkg-config, or -lxml2).
extern "C" {
    pub(crate) fn xmlInitParser();
    pub(crate) fn xmlSetStructuredErrorFunc(ctx: *mut c_void, handler: xmlStructuredErrorFunc);
    pub(crate) fn xmlThrDefSetStructuredErrorFunc(
        ctx: *mut c_void,
        handler: xmlStructuredErrorFunc,
    );
    pub(crate) fn xmlSetExternalEntityLoader(loader: xmlExternalEntityLoader);
    pub(crate) fn xmlNoNetExternalEntityLoader(
        url: *const c_char,
        id: *const c_char,
        context: *mut xmlParserCtxt,
    ) -> *mut xmlParserInput;

    pub(crate) fn xmlReadMemory(
        buffer: *const c_char,
        size: c_int,
        url: *const c_char,
        encoding: *const c_char,
        options: c_int,
    ) -> *mut xmlDoc;
    pub(crate) fn xmlFreeDoc(doc: *mut xmlDoc);

    pub(crate) fn xmlParseDTD(external_id: *const u8, system_id: *const u8) -> *mut xmlDtd;
    pub(crate) fn xmlFreeDtd(dtd: *mut xmlDtd);
    pub(crate) fn xmlNewValidCtxt() -> *mut xmlValidCtxt;
    pub(crate) fn xmlFreeValidCtxt(ctxt: *mut xmlValidCtxt);
    pub(crate) fn xmlValidateDtd(
        ctxt: *mut xmlValidCtxt,
        doc: *mut xmlDoc,
        dtd: *mut xmlDtd,
    ) -> c_int;

    /// Returns `void` in 2.9 and `int` in 2.12+; declared without a result, which
    /// is ABI-compatible with both.
    pub(crate) fn xmlSchemaInitTypes();
    pub(crate) fn xmlSchemaNewParserCtxt(url: *const c_char) -> *mut xmlSchemaParserCtxt;
    pub(crate) fn xmlSchemaSetParserStructuredErrors(
        ctxt: *mut xmlSchemaParserCtxt,
        handler: xmlStructuredErrorFunc,
        ctx: *mut c_void,
    );
    pub(crate) fn xmlSchemaParse(ctxt: *mut xmlSchemaParserCtxt) -> *mut xmlSchema;
    pub(crate) fn xmlSchemaFreeParserCtxt(ctxt: *mut xmlSchemaParserCtxt);
    pub(crate) fn xmlSchemaFree(schema: *mut xmlSchema);
    pub(crate) fn xmlSchemaNewValidCtxt(schema: *mut xmlSchema) -> *mut xmlSchemaValidCtxt;
    pub(crate) fn xmlSchemaSetValidStructuredErrors(
        ctxt: *mut xmlSchemaValidCtxt,
        handler: xmlStructuredErrorFunc,
        ctx: *mut c_void,
    );
    pub(crate) fn xmlSchemaValidateDoc(ctxt: *mut xmlSchemaValidCtxt, doc: *mut xmlDoc) -> c_int;
    pub(crate) fn xmlSchemaFreeValidCtxt(ctxt: *mut xmlSchemaValidCtxt);
}
