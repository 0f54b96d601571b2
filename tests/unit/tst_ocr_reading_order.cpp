// Reading order on synthetic layouts: two and three text columns (with and without a full-width
// title), receipt rows with labels and prices, paragraphs, and the same pages turned by 90 and 180
// degrees and skewed, which must read the same.
#include "tests/support/lector_test.h"

#include <cmath>
#include <functional>

#include "core/ocr/reading_order.h"

using namespace lector::pipeline;

namespace {

struct Page {
    std::vector<LineGeometry> lines;
    std::vector<std::string> names;  // per line, e.g. "L3" = left column, line 3
};

void add(Page& page, const std::string& name, float x0, float y0, float x1, float y1)
{
    page.lines.push_back({Quad{PointF{x0, y0}, PointF{x1, y0}, PointF{x1, y1}, PointF{x0, y1}}, false, false});
    page.names.push_back(name);
}

// Corners in image-axes order (top-left = smallest x + y ...), as the detector reports them.
Quad imageAxesOrder(const Quad& q)
{
    auto pick = [&](auto key, bool wantMin) {
        size_t best = 0;
        for (size_t i = 1; i < 4; ++i)
            if (wantMin ? key(q[i]) < key(q[best]) : key(q[i]) > key(q[best])) best = i;
        return q[best];
    };
    const auto sum = [](PointF p) { return p.x + p.y; };
    const auto diff = [](PointF p) { return p.y - p.x; };
    return {pick(sum, true), pick(diff, true), pick(sum, false), pick(diff, false)};
}

// Turns the page by `degrees` clockwise about (500, 500), sets the flags the crop and classifier
// stages would set for text turned that way.
Page turned(const Page& page, double degrees)
{
    const double a = degrees * M_PI / 180.0, c = std::cos(a), s = std::sin(a);
    Page out = page;
    for (auto& line : out.lines) {
        Quad q;
        for (size_t i = 0; i < 4; ++i) {
            const double x = line.quad[i].x - 500, y = line.quad[i].y - 500;
            q[i] = {static_cast<float>(500 + x * c - y * s), static_cast<float>(500 + x * s + y * c)};
        }
        line.quad = imageAxesOrder(q);
        const double w = std::hypot(line.quad[1].x - line.quad[0].x, line.quad[1].y - line.quad[0].y);
        const double h = std::hypot(line.quad[3].x - line.quad[0].x, line.quad[3].y - line.quad[0].y);
        line.rotated90 = h >= 1.5 * w;
        // Reading direction after the crop: +u (or +v when turned 90); the classifier flips it when it
        // points against the true direction (cos a, sin a).
        const PointF d = readingDirection({line.quad, line.rotated90, false});
        line.rotated180 = d.x * c + d.y * s < 0;
    }
    return out;
}

std::vector<std::vector<std::string>> readRows(const Page& page)
{
    std::vector<std::vector<std::string>> rows;
    for (const auto& row : readingOrder(page.lines)) {
        rows.emplace_back();
        for (int i : row.lines) rows.back().push_back(page.names[static_cast<size_t>(i)]);
    }
    return rows;
}

std::string flat(const std::vector<std::vector<std::string>>& rows)
{
    std::string s;
    for (const auto& r : rows) {
        s += "[";
        for (size_t i = 0; i < r.size(); ++i) s += (i ? " " : "") + r[i];
        s += "]";
    }
    return s;
}

Page twoColumns(bool title)
{
    Page p;
    if (title) add(p, "T", 200, 40, 760, 70);
    for (int k = 0; k < 10; ++k) {
        const float y = 100 + 30.0f * k;
        add(p, "L" + std::to_string(k), 50, y, (k == 9 ? 250.0f : 450.0f - 7.0f * k), y + 20);
        add(p, "R" + std::to_string(k), 500, y, (k == 9 ? 700.0f : 900.0f - 5.0f * k), y + 20);
    }
    return p;
}

std::string expectedColumns(bool title)
{
    std::string s = title ? "[T]" : "";
    for (const char* col : {"L", "R"})
        for (int k = 0; k < 10; ++k) s += "[" + std::string(col) + std::to_string(k) + "]";
    return s;
}

}  // namespace

LECTOR_TEST(readsTwoAlignedColumnsColumnByColumn)
{
    const Page p = twoColumns(false);
    LECTOR_CHECK_EQ(flat(readRows(p)), expectedColumns(false));
    const auto rows = readingOrder(p.lines);
    LECTOR_CHECK(!rows[0].paragraphBefore);
    LECTOR_CHECK(rows[10].paragraphBefore);  // first line of the right column
}

LECTOR_TEST(readsTitleThenColumns)
{
    LECTOR_CHECK_EQ(flat(readRows(twoColumns(true))), expectedColumns(true));
}

LECTOR_TEST(readsThreeColumns)
{
    Page p;
    for (int k = 0; k < 6; ++k) {
        const float y = 100 + 25.0f * k;
        for (int c = 0; c < 3; ++c)
            add(p, std::string(1, char('A' + c)) + std::to_string(k), 40 + 320.0f * c, y + 3.0f * c, 330 + 320.0f * c, y + 3.0f * c + 18);
    }
    std::string want;
    for (int c = 0; c < 3; ++c)
        for (int k = 0; k < 6; ++k) want += "[" + std::string(1, char('A' + c)) + std::to_string(k) + "]";
    LECTOR_CHECK_EQ(flat(readRows(p)), want);
}

LECTOR_TEST(readsReceiptRowsLeftToRight)
{
    Page p;
    add(p, "shop", 150, 20, 450, 44);
    for (int k = 0; k < 6; ++k) {
        const float y = 80 + 28.0f * k;
        add(p, "item" + std::to_string(k), 40, y, 300 + 10.0f * k, y + 18);
        add(p, "price" + std::to_string(k), 520, y + 2, 590, y + 20);  // prices sit a little lower
    }
    std::string want = "[shop]";
    for (int k = 0; k < 6; ++k) want += "[item" + std::to_string(k) + " price" + std::to_string(k) + "]";
    LECTOR_CHECK_EQ(flat(readRows(p)), want);
}

LECTOR_TEST(neverJoinsTwoColumnsInOneRow)
{
    for (bool title : {false, true}) {
        for (const auto& row : readRows(twoColumns(title))) LECTOR_CHECK_EQ(row.size(), size_t(1));
    }
}

LECTOR_TEST(marksParagraphGaps)
{
    Page p;
    const float ys[] = {100, 130, 160, 230, 260};  // a 50-pixel gap (2.5 line heights) before the 4th
    for (int k = 0; k < 5; ++k) add(p, std::to_string(k), 50, ys[k], 600, ys[k] + 20);
    const auto rows = readingOrder(p.lines);
    LECTOR_CHECK_EQ(rows.size(), size_t(5));
    for (int k = 0; k < 5; ++k) LECTOR_CHECK_EQ(rows[static_cast<size_t>(k)].paragraphBefore, k == 3);
}

LECTOR_TEST(readsTurnedAndSkewedPagesLikeUprightOnes)
{
    for (bool title : {false, true}) {
        const Page p = twoColumns(title);
        for (const double degrees : {90.0, 180.0, 270.0, 4.0, -6.0, 12.0}) {
            LECTOR_CHECK_MSG(flat(readRows(turned(p, degrees))) == expectedColumns(title),
                             degrees << " degrees: " << flat(readRows(turned(p, degrees))));
        }
    }
    Page receipt;
    for (int k = 0; k < 5; ++k) {
        add(receipt, "a" + std::to_string(k), 40, 80 + 28.0f * k, 300, 98 + 28.0f * k);
        add(receipt, "b" + std::to_string(k), 520, 80 + 28.0f * k, 590, 98 + 28.0f * k);
    }
    const std::string want = "[a0 b0][a1 b1][a2 b2][a3 b3][a4 b4]";
    for (const double degrees : {0.0, 3.0, -3.0, 90.0, 180.0}) {
        LECTOR_CHECK_MSG(flat(readRows(turned(receipt, degrees))) == want,
                         degrees << " degrees: " << flat(readRows(turned(receipt, degrees))));
    }
}

LECTOR_TEST(handlesEmptyAndSingleLine)
{
    LECTOR_CHECK(readingOrder({}).empty());
    Page p;
    add(p, "x", 0, 0, 10, 5);
    LECTOR_CHECK_EQ(flat(readRows(p)), std::string("[x]"));
}
