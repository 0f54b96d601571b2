#include "ui/model_folder.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>

namespace lector::ui {
namespace {

ModelFolderCheck missing(const QString& file)
{
    ModelFolderCheck c;
    c.missingFile = file;
    c.message = QCoreApplication::translate("ModelFolder", "Missing file: %1").arg(file);
    return c;
}

// Shard names listed in model.safetensors.index.json ("weight_map": tensor -> file).
QStringList shardsOf(const QString& indexPath, bool* parsed)
{
    QFile f(indexPath);
    *parsed = false;
    if (!f.open(QIODevice::ReadOnly)) return {};
    const QJsonDocument doc = QJsonDocument::fromJson(f.read(16 * 1024 * 1024));
    const QJsonObject map = doc.object().value(QLatin1String("weight_map")).toObject();
    if (map.isEmpty()) return {};
    QSet<QString> seen;
    QStringList shards;
    for (auto it = map.begin(); it != map.end(); ++it) {
        const QString s = it.value().toString();
        if (!s.isEmpty() && !seen.contains(s)) {
            seen.insert(s);
            shards << s;
        }
    }
    shards.sort();
    *parsed = true;
    return shards;
}

}  // namespace

QStringList hunyuanBaseFiles()
{
    return {QStringLiteral("config.json"), QStringLiteral("generation_config.json"),
            QStringLiteral("model.safetensors.index.json"), QStringLiteral("preprocessor_config.json"),
            QStringLiteral("special_tokens_map.json"), QStringLiteral("tokenizer.json"),
            QStringLiteral("tokenizer_config.json")};
}

ModelFolderCheck checkHunyuanFolder(const QString& dir)
{
    if (dir.trimmed().isEmpty()) {
        ModelFolderCheck c;
        c.message = QCoreApplication::translate("ModelFolder", "No folder chosen.");
        return c;
    }
    const QDir d(dir);
    if (!d.exists()) {
        ModelFolderCheck c;
        c.message = QCoreApplication::translate("ModelFolder", "Folder does not exist: %1").arg(QDir::toNativeSeparators(dir));
        return c;
    }
    for (const char* name : {"config.json"}) {
        if (!QFileInfo::exists(d.filePath(QLatin1String(name)))) return missing(QLatin1String(name));
    }
    const QString index = d.filePath(QStringLiteral("model.safetensors.index.json"));
    if (QFileInfo::exists(index)) {
        bool parsed = false;
        const QStringList shards = shardsOf(index, &parsed);
        if (!parsed) {
            ModelFolderCheck c;
            c.missingFile = QStringLiteral("model.safetensors.index.json");
            c.message = QCoreApplication::translate("ModelFolder", "Unreadable weight index: %1").arg(c.missingFile);
            return c;
        }
        for (const QString& s : shards) {
            if (!QFileInfo::exists(d.filePath(s))) return missing(s);
        }
    } else if (!QFileInfo::exists(d.filePath(QStringLiteral("model.safetensors")))) {
        ModelFolderCheck c = missing(QStringLiteral("model.safetensors.index.json"));
        c.message = QCoreApplication::translate("ModelFolder", "Missing file: %1 (or %2)")
                        .arg(QStringLiteral("model.safetensors.index.json"), QStringLiteral("model.safetensors"));
        return c;
    }
    for (const char* name : {"tokenizer.json", "preprocessor_config.json"}) {
        if (!QFileInfo::exists(d.filePath(QLatin1String(name)))) return missing(QLatin1String(name));
    }
    ModelFolderCheck c;
    c.ok = true;
    c.message = QCoreApplication::translate("ModelFolder", "HunyuanOCR model found.");
    return c;
}

}  // namespace lector::ui
