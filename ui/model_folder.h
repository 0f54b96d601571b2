// Checks that a folder holds a loadable HunyuanOCR 1.0 model (the v1.0/ files of tencent/HunyuanOCR)
// before the engine is asked to load it, so the settings dialog can name the missing file at once.
// Pure file-system checks, cheap enough for the GUI thread (a few stat() calls and one small JSON read).
#pragma once

#include <QString>
#include <QStringList>

namespace lector::ui {

struct ModelFolderCheck {
    bool ok = false;
    QString missingFile;  // first missing file, relative to the folder ("" when ok or no folder)
    QString message;      // for people, translated
};

// Required: config.json, model weights (model.safetensors.index.json plus every shard it names, or a
// single model.safetensors), tokenizer.json, preprocessor_config.json.
ModelFolderCheck checkHunyuanFolder(const QString& dir);

// Files that make up the v1.0 model as published (used by the downloader; shards come from the index).
QStringList hunyuanBaseFiles();

}  // namespace lector::ui
