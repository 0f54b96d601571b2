// ExportController: "Export current / all" as JSON, CSV (lines or fields), TXT or Markdown, in the
// schema of docs/result-schema.md (core/doc/export_*). Renders on the GUI thread (cheap) and writes the
// file on a worker (QtConcurrent + QSaveFile), reporting back through exported(). GUI thread only.
#pragma once

#include <QFuture>
#include <QObject>
#include <QString>

#include <string>
#include <vector>

#include "core/doc/ocr_result.h"

class QWidget;

namespace lector::ui {

enum class ExportFormat { Json, CsvLines, CsvFields, Text, Markdown };

QString exportFileFilter(ExportFormat format);     // translated file-dialog filter
QString exportSuffix(ExportFormat format);          // "json", "csv", "txt", "md"
// The file's bytes for `results` (several images: one document with a section per image).
std::string renderExport(ExportFormat format, const std::vector<doc::OcrResult>& results);

class ExportController : public QObject {
    Q_OBJECT
public:
    explicit ExportController(QWidget* dialogParent, QObject* parent = nullptr);

    // Asks for a file name, then writes. Returns false when there was nothing to export or the
    // user cancelled.
    bool exportResults(ExportFormat format, const std::vector<doc::OcrResult>& results, const QString& suggestedName);
    // Writes without asking (tests, drag-out).
    QFuture<QString> writeTo(const QString& path, ExportFormat format, const std::vector<doc::OcrResult>& results);

Q_SIGNALS:
    void exported(const QString& path, const QString& error);  // error empty on success

private:
    QWidget* m_dialogParent;
};

}  // namespace lector::ui
