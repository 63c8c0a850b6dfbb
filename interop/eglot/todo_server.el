;;; todo_server.el --- Emacs's eglot drives sansrpc-lsp's todo_server example  -*- lexical-binding: t; -*-

;; Run by lsp/tests/eglot.rs as
;;   emacs --batch -Q -l interop/eglot/todo_server.el
;; with TODO_SERVER (the todo_server binary) and TODO_DIR (a fresh folder) set.
;;
;; Emacs visits a file in text-mode, `eglot' starts the server for it, and the script edits
;; the buffer as a person would (insertions with emoji, CJK and TODOs, a line split, a
;; deletion across a line end), some edits flushed one by one and some several to one
;; `didChange', as eglot batches them. After the last edit it checks, with eglot's own
;; position conversion: the server's diagnostics for the final version sit on every TODO of
;; the buffer and nowhere else; a hover on each line answers `version V: LINE`. Then the
;; lifecycle as eglot sends it: `shutdown' and `exit' with `"params": null' (eglot 1.9's
;; `jsonrpc-request SERVER :shutdown nil'), the server exits by itself with status 0.
;; Prints one `ok:' line, or `FAIL:' and exits 1.

(require 'cl-lib)
(setq package-directory-list
      (list (or (getenv "EGLOT_ELPA") "/usr/share/emacs/site-lisp/elpa")))
(package-initialize)
(require 'eglot)

(defvar todo-checks 0 "How many checks passed.")
(defvar todo-edits 0 "How many edits were made.")
(defvar todo-flushes 0 "How many didChange notifications eglot was made to send.")

(defun todo-fail (format-string &rest args)
  (princ (concat "FAIL: " (apply #'format format-string args) "\n"))
  (kill-emacs 1))

(defun todo-check (ok format-string &rest args)
  (if ok (cl-incf todo-checks) (apply #'todo-fail format-string args)))

(defun todo-wait (what pred &optional seconds)
  "Reads the server's output until PRED holds, at most SECONDS (default 20)."
  (let ((deadline (+ (float-time) (or seconds 20))))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (unless (funcall pred) (todo-fail "timed out waiting for %s" what))))

;; Every publication, newest first: (VERSION . DIAGNOSTICS).
(defvar todo-published nil)
(cl-defmethod eglot-handle-notification :before
  (_server (_method (eql textDocument/publishDiagnostics)) &key _uri diagnostics version
           &allow-other-keys)
  (push (cons version diagnostics) todo-published))

(defun todo-count (text)
  "How many times TODO is in TEXT."
  (let ((n 0) (from 0))
    (while (string-match "TODO" text from) (cl-incf n) (setq from (match-end 0)))
    n))

(defun todo-diagnostics-agree ()
  "Waits for the diagnostics of the buffer's version; checks that, converted as eglot
converts them, they are the buffer's TODOs, each once, and that no version was published
after a newer one."
  (let ((version eglot--versioned-identifier)
        (text (buffer-substring-no-properties (point-min) (point-max))))
    (todo-wait (format "the diagnostics of version %s" version)
               (lambda () (eql (car (car todo-published)) version)))
    (let ((versions (reverse (mapcar #'car todo-published))))
      (todo-check (equal versions (sort (copy-sequence versions) #'<))
                  "diagnostics published out of order: %S" versions))
    (let ((diagnostics (append (cdr (car todo-published)) nil))
          (starts nil))
      (todo-check (= (length diagnostics) (todo-count text))
                  "%d diagnostics for %d TODOs in %S" (length diagnostics) (todo-count text) text)
      (dolist (d diagnostics)
        (let* ((range (plist-get d :range))
               (start (eglot--lsp-position-to-point (plist-get range :start)))
               (end (eglot--lsp-position-to-point (plist-get range :end))))
          (push start starts)
          (todo-check (equal (buffer-substring-no-properties start end) "TODO")
                      "a diagnostic at %S covers %S in %S" range
                      (buffer-substring-no-properties start end) text)
          (todo-check (equal (plist-get d :message) "TODO found") "message %S" d)))
      (todo-check (= (length (delete-dups starts)) (length diagnostics))
                  "two diagnostics on one TODO: %S" diagnostics))))

(defun todo-main ()
  (let* ((server-program (or (getenv "TODO_SERVER") (todo-fail "TODO_SERVER is not set")))
         (dir (file-name-as-directory (or (getenv "TODO_DIR") (todo-fail "TODO_DIR is not set"))))
         (file (expand-file-name "notes.txt" dir))
         (eglot-server-programs `((text-mode . (,server-program))))
         (eglot-send-changes-idle-time 3600) ; flushed by hand below, as a hover would
         (eglot-sync-connect t)
         (eglot-autoshutdown nil))
    (with-temp-file file (insert "# notes 😀\n日本語 line\nend 𝄞\n"))
    (find-file file)
    (text-mode)
    (apply #'eglot (eglot--guess-contact))
    (todo-wait "the server to initialize" #'eglot-current-server)
    (let* ((server (eglot-current-server))
           (process (jsonrpc--process server))
           (offered (plist-get (eglot-client-capabilities server) :general))
           (encoding (or (plist-get (eglot--capabilities server) :positionEncoding) "utf-16")))
      ;; eglot 1.9 offers no `general.positionEncodings': UTF-16, the default.
      (todo-check (null (plist-get offered :positionEncodings))
                  "eglot offered position encodings %S" offered)
      (todo-check (equal encoding "utf-16") "the server chose %s" encoding)
      (cl-flet ((flush () (cl-incf todo-flushes) (eglot--signal-textDocument/didChange))
                (at (line char) (goto-char (point-min)) (forward-line line) (forward-char char))
                (put (text) (cl-incf todo-edits) (insert text))
                (cut (n) (cl-incf todo-edits) (delete-char n)))
        ;; Edits, as a person types them (places in characters); `flush' sends what is
        ;; pending as one didChange.
        (at 0 9) (put " TODO 𝄞") (flush)                 ; after 😀 (two UTF-16 units)
        (at 1 2) (put "😀") (flush)                      ; inside CJK
        (at 2 0) (put "TODO ") (put "✓ ") (flush)        ; two edits, one didChange
        (goto-char (point-max)) (put "last 😀😀 TODO") (flush)
        (todo-diagnostics-agree)                         ; once typing pauses, midway
        (at 1 0) (put "🎉") (at 1 4) (put "\n") (flush)  ; a split after emoji and CJK
        (at 0 0) (end-of-line) (cut 1) (flush)           ; lines 0 and 1 joined
        (at 1 1) (cut 2) (put "TODO") (flush)            ; a replacement after the join
        (dolist (word '("a" "😀" "b" "TODO"))
          (goto-char (point-max)) (put (concat " " word)) (flush))
        (at 0 0) (put "𝄞TODO𝄞 ") (flush))
      (let ((version eglot--versioned-identifier)
            (text (buffer-substring-no-properties (point-min) (point-max))))
        (todo-diagnostics-agree)
        ;; A hover on each line answers its version and the line's text.
        (let ((lines (split-string text "\n")))
          (dotimes (n (length lines))
            (goto-char (point-min)) (forward-line n)
            (let* ((hover (jsonrpc-request server :textDocument/hover
                                           (eglot--TextDocumentPositionParams)))
                   (value (plist-get (plist-get hover :contents) :value))
                   (want (format "version %d: %s" version (nth n lines))))
              (todo-check (equal value want) "hover on line %d: %S, not %S" n value want))))
        ;; Shutdown as eglot sends it, `params' null both times, and exit: status 0.
        (todo-check (null (jsonrpc-request server :shutdown nil :timeout 10))
                    "shutdown was not answered null")
        (jsonrpc-notify server :exit nil)
        (todo-wait "the server to exit by itself" (lambda () (not (process-live-p process))) 10)
        (todo-check (= (process-exit-status process) 0)
                    "the server exited with status %s" (process-exit-status process))
        (jsonrpc-shutdown server)
        (princ (format "ok: Emacs %s, eglot %s, %s, %d edits in %d didChange, version %d, %d diagnostics published, %d TODOs, %d lines hovered, exit 0, %d checks\n"
                       emacs-version
                       (package-version-join
                        (package-desc-version (cadr (assq 'eglot package-alist))))
                       encoding todo-edits todo-flushes version (length todo-published)
                       (todo-count text)
                       (length (split-string text "\n"))
                       todo-checks))))))

(condition-case err
    (progn (todo-main) (kill-emacs 0))
  (error (todo-fail "%S" err)))

;;; todo_server.el ends here
