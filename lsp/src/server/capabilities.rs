//! The capabilities that follow from the registered handlers.

use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument,
    Notification, WillSaveTextDocument,
};
use lsp_types::request::{
    CallHierarchyPrepare, CodeActionRequest, CodeLensRequest, ColorPresentationRequest, Completion,
    DocumentColor, DocumentHighlightRequest, DocumentLinkRequest, DocumentSymbolRequest,
    FoldingRangeRequest, Formatting, GotoDeclaration, GotoDefinition, GotoImplementation,
    GotoTypeDefinition, HoverRequest, InlayHintRequest, LinkedEditingRange, MonikerRequest,
    RangeFormatting, References, Rename, Request, SelectionRangeRequest, SignatureHelpRequest,
    WillSaveWaitUntil, WorkspaceSymbolRequest,
};
use lsp_types::{
    CallHierarchyServerCapability, CodeActionProviderCapability, CodeLensOptions,
    ColorProviderCapability, CompletionOptions, DeclarationCapability, DocumentLinkOptions,
    FoldingRangeProviderCapability, HoverProviderCapability, ImplementationProviderCapability,
    LinkedEditingRangeServerCapabilities, OneOf, SelectionRangeProviderCapability,
    ServerCapabilities, SignatureHelpOptions, TextDocumentSyncCapability, TextDocumentSyncKind,
    TextDocumentSyncOptions, TextDocumentSyncSaveOptions, TypeDefinitionProviderCapability,
};

/// What the methods in `methods` imply, with the documents' sync when the server keeps
/// them (open and close, incremental changes). A method whose capability needs options
/// only the application knows (a semantic tokens legend, the commands of
/// `workspace/executeCommand`, on-type formatting's trigger characters) implies nothing:
/// set it with `ServerBuilder::capabilities`.
pub(super) fn implied<'a>(
    methods: impl Iterator<Item = &'a str>,
    documents: bool,
) -> ServerCapabilities {
    let mut caps = ServerCapabilities::default();
    let mut sync = TextDocumentSyncOptions::default();
    if documents {
        sync.open_close = Some(true);
        sync.change = Some(TextDocumentSyncKind::INCREMENTAL);
    }
    for method in methods {
        match method {
            m if m == HoverRequest::METHOD => {
                caps.hover_provider = Some(HoverProviderCapability::Simple(true))
            }
            m if m == Completion::METHOD => {
                caps.completion_provider = Some(CompletionOptions::default())
            }
            m if m == SignatureHelpRequest::METHOD => {
                caps.signature_help_provider = Some(SignatureHelpOptions::default())
            }
            m if m == GotoDefinition::METHOD => caps.definition_provider = Some(OneOf::Left(true)),
            m if m == GotoDeclaration::METHOD => {
                caps.declaration_provider = Some(DeclarationCapability::Simple(true))
            }
            m if m == GotoTypeDefinition::METHOD => {
                caps.type_definition_provider = Some(TypeDefinitionProviderCapability::Simple(true))
            }
            m if m == GotoImplementation::METHOD => {
                caps.implementation_provider = Some(ImplementationProviderCapability::Simple(true))
            }
            m if m == References::METHOD => caps.references_provider = Some(OneOf::Left(true)),
            m if m == DocumentHighlightRequest::METHOD => {
                caps.document_highlight_provider = Some(OneOf::Left(true))
            }
            m if m == DocumentSymbolRequest::METHOD => {
                caps.document_symbol_provider = Some(OneOf::Left(true))
            }
            m if m == WorkspaceSymbolRequest::METHOD => {
                caps.workspace_symbol_provider = Some(OneOf::Left(true))
            }
            m if m == CodeActionRequest::METHOD => {
                caps.code_action_provider = Some(CodeActionProviderCapability::Simple(true))
            }
            m if m == CodeLensRequest::METHOD => {
                caps.code_lens_provider = Some(CodeLensOptions {
                    resolve_provider: None,
                })
            }
            m if m == Formatting::METHOD => {
                caps.document_formatting_provider = Some(OneOf::Left(true))
            }
            m if m == RangeFormatting::METHOD => {
                caps.document_range_formatting_provider = Some(OneOf::Left(true))
            }
            m if m == Rename::METHOD => caps.rename_provider = Some(OneOf::Left(true)),
            m if m == DocumentLinkRequest::METHOD => {
                caps.document_link_provider = Some(DocumentLinkOptions {
                    resolve_provider: None,
                    work_done_progress_options: Default::default(),
                })
            }
            m if m == DocumentColor::METHOD || m == ColorPresentationRequest::METHOD => {
                caps.color_provider = Some(ColorProviderCapability::Simple(true))
            }
            m if m == FoldingRangeRequest::METHOD => {
                caps.folding_range_provider = Some(FoldingRangeProviderCapability::Simple(true))
            }
            m if m == SelectionRangeRequest::METHOD => {
                caps.selection_range_provider = Some(SelectionRangeProviderCapability::Simple(true))
            }
            m if m == CallHierarchyPrepare::METHOD => {
                caps.call_hierarchy_provider = Some(CallHierarchyServerCapability::Simple(true))
            }
            m if m == LinkedEditingRange::METHOD => {
                caps.linked_editing_range_provider =
                    Some(LinkedEditingRangeServerCapabilities::Simple(true))
            }
            m if m == MonikerRequest::METHOD => caps.moniker_provider = Some(OneOf::Left(true)),
            m if m == InlayHintRequest::METHOD => {
                caps.inlay_hint_provider = Some(OneOf::Left(true))
            }
            m if m == DidOpenTextDocument::METHOD || m == DidCloseTextDocument::METHOD => {
                sync.open_close = Some(true)
            }
            m if m == DidChangeTextDocument::METHOD && sync.change.is_none() => {
                // The application keeps the text itself: whole documents are simplest.
                sync.change = Some(TextDocumentSyncKind::FULL)
            }
            m if m == WillSaveTextDocument::METHOD => sync.will_save = Some(true),
            m if m == WillSaveWaitUntil::METHOD => sync.will_save_wait_until = Some(true),
            m if m == DidSaveTextDocument::METHOD => {
                sync.save = Some(TextDocumentSyncSaveOptions::Supported(true))
            }
            _ => {}
        }
    }
    if sync != TextDocumentSyncOptions::default() {
        caps.text_document_sync = Some(TextDocumentSyncCapability::Options(sync));
    }
    caps
}
