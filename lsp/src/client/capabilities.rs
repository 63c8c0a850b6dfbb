//! Client capabilities as two editors send them, for [`ClientBuilder::new`](super::ClientBuilder::new):
//! what a server sees decides what it sends (markdown or plain text hovers, versioned
//! diagnostics, work-done progress, the position encoding), so a test of a server is only
//! as good as the capabilities it was initialized with.
//!
//! They are this crate's own summaries of the parts that change what a server does, not
//! captures: each says which editor release it follows.

use lsp_types::ClientCapabilities;
use serde_json::{json, Value};

/// As VS Code 1.9x sends them: no `general.positionEncodings` (so UTF-16), markdown
/// hovers first, versioned diagnostics with tags and related information, incremental
/// document sync with `didSave`, snippets in completion, work-done progress,
/// `workspace/configuration` and workspace folders.
pub fn vscode() -> ClientCapabilities {
    decode(json!({
        "workspace": {
            "applyEdit": true,
            "workspaceEdit": {"documentChanges": true},
            "didChangeConfiguration": {"dynamicRegistration": true},
            "didChangeWatchedFiles": {"dynamicRegistration": true},
            "symbol": {"dynamicRegistration": true},
            "executeCommand": {"dynamicRegistration": true},
            "configuration": true,
            "workspaceFolders": true
        },
        "textDocument": {
            "synchronization": {
                "dynamicRegistration": true,
                "willSave": true,
                "willSaveWaitUntil": true,
                "didSave": true
            },
            "completion": {
                "dynamicRegistration": true,
                "contextSupport": true,
                "completionItem": {
                    "snippetSupport": true,
                    "commitCharactersSupport": true,
                    "documentationFormat": ["markdown", "plaintext"],
                    "deprecatedSupport": true,
                    "preselectSupport": true,
                    "insertReplaceSupport": true,
                    "labelDetailsSupport": true
                }
            },
            "hover": {"dynamicRegistration": true, "contentFormat": ["markdown", "plaintext"]},
            "signatureHelp": {
                "dynamicRegistration": true,
                "signatureInformation": {"documentationFormat": ["markdown", "plaintext"]}
            },
            "definition": {"dynamicRegistration": true, "linkSupport": true},
            "references": {"dynamicRegistration": true},
            "documentHighlight": {"dynamicRegistration": true},
            "documentSymbol": {
                "dynamicRegistration": true,
                "hierarchicalDocumentSymbolSupport": true
            },
            "codeAction": {"dynamicRegistration": true, "isPreferredSupport": true},
            "formatting": {"dynamicRegistration": true},
            "rename": {"dynamicRegistration": true, "prepareSupport": true},
            "publishDiagnostics": {
                "relatedInformation": true,
                "versionSupport": true,
                "tagSupport": {"valueSet": [1, 2]},
                "codeDescriptionSupport": true,
                "dataSupport": true
            }
        },
        "window": {
            "workDoneProgress": true,
            "showMessage": {"messageActionItem": {"additionalPropertiesSupport": true}},
            "showDocument": {"support": true}
        },
        "general": {
            "staleRequestSupport": {
                "cancel": true,
                "retryOnContentModified": []
            },
            "regularExpressions": {"engine": "ECMAScript", "version": "ES2020"},
            "markdown": {"parser": "marked", "version": "1.1.0"}
        }
    }))
}

/// As Neovim 0.11 sends them: `general.positionEncodings` UTF-8, UTF-16, UTF-32 (in that
/// order, so a server that speaks UTF-8 counts bytes), markdown hovers first, diagnostics
/// with tags and related information (without `versionSupport`), incremental sync with
/// `didSave`, work-done progress, `workspace/configuration` and workspace folders.
pub fn neovim() -> ClientCapabilities {
    decode(json!({
        "workspace": {
            "applyEdit": true,
            "workspaceEdit": {"resourceOperations": ["rename", "create", "delete"]},
            "didChangeConfiguration": {"dynamicRegistration": false},
            "didChangeWatchedFiles": {"dynamicRegistration": false},
            "symbol": {"dynamicRegistration": false},
            "configuration": true,
            "workspaceFolders": true
        },
        "textDocument": {
            "synchronization": {
                "dynamicRegistration": false,
                "willSave": true,
                "willSaveWaitUntil": true,
                "didSave": true
            },
            "completion": {
                "dynamicRegistration": false,
                "completionItem": {
                    "snippetSupport": true,
                    "commitCharactersSupport": false,
                    "documentationFormat": ["markdown", "plaintext"],
                    "deprecatedSupport": true,
                    "preselectSupport": false
                }
            },
            "hover": {"dynamicRegistration": true, "contentFormat": ["markdown", "plaintext"]},
            "signatureHelp": {
                "dynamicRegistration": false,
                "signatureInformation": {"documentationFormat": ["markdown", "plaintext"]}
            },
            "definition": {"dynamicRegistration": true, "linkSupport": true},
            "references": {"dynamicRegistration": false},
            "documentHighlight": {"dynamicRegistration": false},
            "documentSymbol": {
                "dynamicRegistration": false,
                "hierarchicalDocumentSymbolSupport": true
            },
            "codeAction": {"dynamicRegistration": true, "isPreferredSupport": true},
            "formatting": {"dynamicRegistration": true},
            "rename": {"dynamicRegistration": true, "prepareSupport": true},
            "publishDiagnostics": {
                "relatedInformation": true,
                "tagSupport": {"valueSet": [1, 2]},
                "dataSupport": true
            }
        },
        "window": {
            "workDoneProgress": true,
            "showMessage": {"messageActionItem": {"additionalPropertiesSupport": true}},
            "showDocument": {"support": true}
        },
        "general": {
            "positionEncodings": ["utf-8", "utf-16", "utf-32"]
        }
    }))
}

/// `value` as lsp-types' capabilities: the constants above always decode (a unit test
/// checks each), so the fallback is never taken.
fn decode(value: Value) -> ClientCapabilities {
    serde_json::from_value(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use lsp_types::PositionEncodingKind;

    #[test]
    fn both_sets_decode_whole() {
        let vscode = super::vscode();
        let general = vscode.general.unwrap();
        assert!(general.position_encodings.is_none());
        assert!(general.stale_request_support.is_some());
        let diagnostics = vscode.text_document.unwrap().publish_diagnostics.unwrap();
        assert_eq!(diagnostics.version_support, Some(true));

        let neovim = super::neovim();
        assert_eq!(
            neovim.general.unwrap().position_encodings.unwrap(),
            [
                PositionEncodingKind::UTF8,
                PositionEncodingKind::UTF16,
                PositionEncodingKind::UTF32
            ]
        );
        assert_eq!(neovim.window.unwrap().work_done_progress, Some(true));
        let hover = neovim.text_document.unwrap().hover.unwrap();
        assert_eq!(hover.content_format.unwrap().len(), 2);
    }
}
