#include "ui/results_panel.h"

#include <QEvent>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QTabWidget>
#include <QTableWidget>
#include <QTextBrowser>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

#include "core/doc/export_json.h"
#include "core/doc/export_text.h"
#include "ui/overlay_item.h"

namespace lector::ui {
namespace {

QString boxText(const std::array<int, 4>& b)
{
    return QStringLiteral("%1, %2 – %3, %4").arg(b[0]).arg(b[1]).arg(b[2]).arg(b[3]);
}

QTableWidget* makeTable(int columns, QWidget* parent)
{
    auto* t = new QTableWidget(0, columns, parent);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setWordWrap(false);
    t->verticalHeader()->setVisible(false);
    t->verticalHeader()->setDefaultSectionSize(t->fontMetrics().height() + 8);
    t->horizontalHeader()->setHighlightSections(false);
    t->setAlternatingRowColors(true);
    return t;
}

}  // namespace

ResultsPanel::ResultsPanel(QWidget* parent) : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);

    m_banner = new QLabel(this);
    m_banner->setWordWrap(true);
    m_banner->setVisible(false);
    m_banner->setStyleSheet(QStringLiteral("QLabel { background: #fdecea; color: #8a1c1c; border-radius: 4px; padding: 6px; }"));
    layout->addWidget(m_banner);

    m_tabs = new QTabWidget(this);
    m_tabs->setDocumentMode(true);
    layout->addWidget(m_tabs, 1);

    // Text
    auto* textPage = new QWidget(m_tabs);
    auto* textLayout = new QVBoxLayout(textPage);
    textLayout->setContentsMargins(0, 4, 0, 0);
    m_text = new QPlainTextEdit(textPage);
    m_text->setReadOnly(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    QFont textFont = m_text->font();
    textFont.setPointSizeF(textFont.pointSizeF() * 1.1);
    m_text->setFont(textFont);
    auto* textBar = new QHBoxLayout;
    textBar->addStretch(1);
    m_copyAll = new QToolButton(textPage);
    m_copyAll->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_copyAll->setIcon(QIcon(QStringLiteral(":/icons/copy.svg")));
    textBar->addWidget(m_copyAll);
    textLayout->addWidget(m_text, 1);
    textLayout->addLayout(textBar);
    connect(m_copyAll, &QToolButton::clicked, this, [this] { Q_EMIT copyRequested(m_text->toPlainText()); });
    m_tabs->addTab(textPage, QString());

    // Lines
    m_lines = makeTable(4, m_tabs);
    m_lines->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_lines->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_lines->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    m_lines->horizontalHeader()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
    m_lines->horizontalHeader()->setSectionResizeMode(3, QHeaderView::ResizeToContents);
    connect(m_lines, &QTableWidget::itemSelectionChanged, this, &ResultsPanel::onTableSelectionChanged);
    m_tabs->addTab(m_lines, QString());

    // Fields
    auto* fieldsPage = new QWidget(m_tabs);
    auto* fieldsLayout = new QVBoxLayout(fieldsPage);
    fieldsLayout->setContentsMargins(0, 4, 0, 0);
    m_fields = makeTable(2, fieldsPage);
    m_fields->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_fields->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_fields->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    m_fieldsEmpty = new QLabel(fieldsPage);
    m_fieldsEmpty->setWordWrap(true);
    m_fieldsEmpty->setAlignment(Qt::AlignCenter);
    m_fieldsEmpty->setEnabled(false);
    fieldsLayout->addWidget(m_fields, 1);
    fieldsLayout->addWidget(m_fieldsEmpty);
    m_tabs->addTab(fieldsPage, QString());

    // Markdown
    m_markdown = new QTextBrowser(m_tabs);
    m_markdown->setOpenExternalLinks(false);
    m_tabs->addTab(m_markdown, QString());

    // JSON
    m_json = new QPlainTextEdit(m_tabs);
    m_json->setReadOnly(true);
    m_json->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_json->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_tabs->addTab(m_json, QString());

    retranslate();
    clear();
}

void ResultsPanel::retranslate()
{
    m_tabs->setTabText(TextTab, tr("Text"));
    m_tabs->setTabText(LinesTab, tr("Lines"));
    m_tabs->setTabText(FieldsTab, tr("Fields"));
    m_tabs->setTabText(MarkdownTab, tr("Markdown"));
    m_tabs->setTabText(JsonTab, tr("JSON"));
    m_copyAll->setText(tr("Copy all"));
    m_copyAll->setToolTip(tr("Copy the whole text to the clipboard"));
    m_lines->setHorizontalHeaderLabels({tr("#"), tr("Text"), tr("Confidence"), tr("Box (x0, y0 – x1, y1)")});
    m_fields->setHorizontalHeaderLabels({tr("Field"), tr("Value")});
    m_fieldsEmpty->setText(tr("No fields. Choose an extraction preset (ID card, Invoice, Receipt) to fill this table."));
    m_text->setPlaceholderText(tr("The recognised text appears here."));
}

void ResultsPanel::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::LanguageChange) retranslate();
    QWidget::changeEvent(event);
}

void ResultsPanel::clear(const QString& placeholder)
{
    m_result.reset();
    m_banner->setVisible(false);
    m_text->clear();
    if (!placeholder.isEmpty()) m_text->setPlaceholderText(placeholder);
    m_syncing = true;
    m_lines->setRowCount(0);
    m_fields->setRowCount(0);
    m_syncing = false;
    m_fieldsEmpty->setVisible(true);
    m_fields->setVisible(false);
    m_markdown->clear();
    m_json->clear();
    m_copyAll->setEnabled(false);
}

void ResultsPanel::setPartialText(const QString& text)
{
    m_text->setPlainText(text);
    m_text->moveCursor(QTextCursor::End);
}

void ResultsPanel::setResult(const doc::OcrResult& result)
{
    clear();
    m_result = result;
    if (result.error) {
        m_banner->setText(tr("Recognition failed: %1").arg(QString::fromStdString(result.error->message)));
        m_banner->setVisible(true);
    }
    m_text->setPlainText(QString::fromStdString(doc::toPlainText(result)));
    m_copyAll->setEnabled(!m_text->toPlainText().isEmpty());
    fillLines(result);
    fillFields(result);
    m_markdown->setMarkdown(QString::fromStdString(doc::toMarkdown(result)));
    m_json->setPlainText(QString::fromStdString(doc::toJsonText({result})));
}

void ResultsPanel::fillLines(const doc::OcrResult& result)
{
    m_syncing = true;
    m_lines->setRowCount(static_cast<int>(result.lines.size()));
    for (int i = 0; i < static_cast<int>(result.lines.size()); ++i) {
        const doc::TextLine& line = result.lines[static_cast<size_t>(i)];
        auto* num = new QTableWidgetItem(QString::number(i + 1));
        num->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        num->setForeground(palette().color(QPalette::PlaceholderText));
        auto* text = new QTableWidgetItem(QString::fromStdString(line.text));
        text->setToolTip(text->text());
        auto* conf = new QTableWidgetItem(line.confidence ? QString::number(static_cast<double>(*line.confidence) * 100.0, 'f', 1) + QLatin1Char('%')
                                                          : QStringLiteral("—"));
        conf->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        conf->setForeground(OverlayItem::tintFor(line.confidence).darker(115));
        auto* box = new QTableWidgetItem(boxText(line.box));
        box->setForeground(palette().color(QPalette::PlaceholderText));
        m_lines->setItem(i, 0, num);
        m_lines->setItem(i, 1, text);
        m_lines->setItem(i, 2, conf);
        m_lines->setItem(i, 3, box);
    }
    m_syncing = false;
}

void ResultsPanel::fillFields(const doc::OcrResult& result)
{
    m_fields->setRowCount(static_cast<int>(result.fields.size()));
    for (int i = 0; i < static_cast<int>(result.fields.size()); ++i) {
        const auto& [key, value] = result.fields[static_cast<size_t>(i)];
        auto* k = new QTableWidgetItem(QString::fromStdString(key));
        QFont bold = k->font();
        bold.setBold(true);
        k->setFont(bold);
        m_fields->setItem(i, 0, k);
        m_fields->setItem(i, 1, new QTableWidgetItem(QString::fromStdString(value)));
    }
    const bool any = !result.fields.empty();
    m_fields->setVisible(any);
    m_fieldsEmpty->setVisible(!any);
}

QList<int> ResultsPanel::selectedLines() const
{
    QList<int> rows;
    for (const QModelIndex& idx : m_lines->selectionModel()->selectedRows()) rows.append(idx.row());
    std::sort(rows.begin(), rows.end());
    return rows;
}

void ResultsPanel::selectLines(const QList<int>& lines)
{
    m_syncing = true;
    m_lines->clearSelection();
    QItemSelection selection;
    for (int row : lines) {
        if (row < 0 || row >= m_lines->rowCount()) continue;
        selection.select(m_lines->model()->index(row, 0), m_lines->model()->index(row, m_lines->columnCount() - 1));
    }
    m_lines->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
    if (!lines.isEmpty() && lines.first() < m_lines->rowCount()) m_lines->scrollToItem(m_lines->item(lines.first(), 1));
    m_syncing = false;
}

QString ResultsPanel::plainText() const { return m_text->toPlainText(); }

void ResultsPanel::onTableSelectionChanged()
{
    if (m_syncing) return;
    Q_EMIT lineSelectionChanged(selectedLines());
}

}  // namespace lector::ui
