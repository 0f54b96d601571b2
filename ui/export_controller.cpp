#include "ui/export_controller.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileDialog>
#include <QSaveFile>
#include <QStandardPaths>
#include <QtConcurrent/QtConcurrentRun>

#include "core/doc/export_csv.h"
#include "core/doc/export_json.h"
#include "core/doc/export_text.h"

namespace lector::ui {

QString exportFileFilter(ExportFormat format)
{
    switch (format) {
    case ExportFormat::Json: return QCoreApplication::translate("ExportController", "JSON (*.json)");
    case ExportFormat::CsvLines: return QCoreApplication::translate("ExportController", "CSV, one row per line (*.csv)");
    case ExportFormat::CsvFields: return QCoreApplication::translate("ExportController", "CSV, one row per image with its fields (*.csv)");
    case ExportFormat::Text: return QCoreApplication::translate("ExportController", "Text (*.txt)");
    case ExportFormat::Markdown: return QCoreApplication::translate("ExportController", "Markdown (*.md)");
    }
    return {};
}

QString exportSuffix(ExportFormat format)
{
    switch (format) {
    case ExportFormat::Json: return QStringLiteral("json");
    case ExportFormat::CsvLines:
    case ExportFormat::CsvFields: return QStringLiteral("csv");
    case ExportFormat::Text: return QStringLiteral("txt");
    case ExportFormat::Markdown: return QStringLiteral("md");
    }
    return {};
}

std::string renderExport(ExportFormat format, const std::vector<doc::OcrResult>& results)
{
    switch (format) {
    case ExportFormat::Json: return doc::toJsonText(results);
    case ExportFormat::CsvLines: return doc::toCsv(results);
    case ExportFormat::CsvFields: return doc::toFieldsCsv(results);
    case ExportFormat::Text:
    case ExportFormat::Markdown: break;
    }
    const bool md = format == ExportFormat::Markdown;
    if (results.size() == 1) return (md ? doc::toMarkdown(results[0]) : doc::toPlainText(results[0])) + "\n";
    std::string out;
    for (const auto& r : results) {
        if (!out.empty()) out += "\n";
        // A heading per image so the parts can be told apart.
        out += md ? "## " + doc::escapeMarkdown(r.image) + "\n\n" + doc::toMarkdown(r) + "\n"
                  : "=== " + r.image + " ===\n" + doc::toPlainText(r) + "\n";
    }
    return out;
}

ExportController::ExportController(QWidget* dialogParent, QObject* parent) : QObject(parent), m_dialogParent(dialogParent) {}

bool ExportController::exportResults(ExportFormat format, const std::vector<doc::OcrResult>& results,
                                     const QString& suggestedName)
{
    if (results.empty()) return false;
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    const QString suggested = QDir(dir).filePath(suggestedName + QLatin1Char('.') + exportSuffix(format));
    QString path = QFileDialog::getSaveFileName(m_dialogParent, tr("Export results"), suggested, exportFileFilter(format));
    if (path.isEmpty()) return false;
    if (QFileInfo(path).suffix().isEmpty()) path += QLatin1Char('.') + exportSuffix(format);
    writeTo(path, format, results);
    return true;
}

QFuture<QString> ExportController::writeTo(const QString& path, ExportFormat format,
                                           const std::vector<doc::OcrResult>& results)
{
    std::string bytes = renderExport(format, results);
    auto future = QtConcurrent::run([path, bytes = std::move(bytes)]() -> QString {
        QSaveFile file(path);
        if (!file.open(QIODevice::WriteOnly)) return file.errorString();
        if (file.write(bytes.data(), static_cast<qint64>(bytes.size())) < 0) return file.errorString();
        if (!file.commit()) return file.errorString();
        return {};
    });
    future.then(this, [this, path](const QString& error) { Q_EMIT exported(path, error); });
    return future;
}

}  // namespace lector::ui
