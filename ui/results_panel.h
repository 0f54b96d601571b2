// ResultsPanel: the recognised result in five tabs: Text (selectable, Copy all), Lines (text,
// confidence, box; selection synced with the image overlay), Fields (key/value of extraction presets),
// Markdown (rendered) and JSON (the result object of docs/result-schema.md). Display only: no logic
// beyond formatting. GUI thread only.
#pragma once

#include <QList>
#include <QWidget>

#include <optional>

#include "core/doc/ocr_result.h"

class QLabel;
class QPlainTextEdit;
class QTabWidget;
class QTableWidget;
class QTextBrowser;
class QToolButton;

namespace lector::ui {

class ResultsPanel : public QWidget {
    Q_OBJECT
public:
    enum Tab { TextTab, LinesTab, FieldsTab, MarkdownTab, JsonTab };

    explicit ResultsPanel(QWidget* parent = nullptr);

    void setResult(const doc::OcrResult& result);
    void clear(const QString& placeholder = {});
    // Streamed text of a prompt-driven model while it runs.
    void setPartialText(const QString& text);
    const std::optional<doc::OcrResult>& result() const { return m_result; }

    QList<int> selectedLines() const;
    void selectLines(const QList<int>& lines);   // does not emit lineSelectionChanged
    QString plainText() const;

    // For tests and screenshots.
    QTabWidget* tabs() const { return m_tabs; }
    QTableWidget* linesTable() const { return m_lines; }
    QTableWidget* fieldsTable() const { return m_fields; }

Q_SIGNALS:
    void lineSelectionChanged(const QList<int>& lines);
    void copyRequested(const QString& text);

protected:
    void changeEvent(QEvent* event) override;

private:
    void retranslate();
    void fillLines(const doc::OcrResult& result);
    void fillFields(const doc::OcrResult& result);
    void onTableSelectionChanged();

    QTabWidget* m_tabs;
    QLabel* m_banner;
    QPlainTextEdit* m_text;
    QToolButton* m_copyAll;
    QTableWidget* m_lines;
    QTableWidget* m_fields;
    QLabel* m_fieldsEmpty;
    QTextBrowser* m_markdown;
    QPlainTextEdit* m_json;
    std::optional<doc::OcrResult> m_result;
    bool m_syncing = false;
};

}  // namespace lector::ui
