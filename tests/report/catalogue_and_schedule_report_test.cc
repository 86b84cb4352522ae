#include <gtest/gtest.h>

#include <sstream>

#include "hyperpipe/cluster/gpu_catalogue.h"
#include "hyperpipe/model/catalogue.h"
#include "hyperpipe/report/catalogue_report.h"
#include "hyperpipe/report/schedule_report.h"
#include "hyperpipe/schedule/generators.h"

namespace hyperpipe::report {
namespace {

// Every catalogue entry is in the document, and the table is rendered from it.
TEST(CatalogueReport, TheTablesShowWhatTheDocumentsHold) {
  const nlohmann::json models = models_document();
  EXPECT_EQ(models["format"], kModelsFormat);
  ASSERT_EQ(models["models"].size(), model::model_catalogue().size());
  nlohmann::json renamed = models;
  renamed["models"][0]["name"] = "renamed-in-the-document";
  std::ostringstream table;
  print_models(renamed, table);
  EXPECT_NE(table.str().find("renamed-in-the-document"), std::string::npos);

  const nlohmann::json devices = devices_document(cluster::gpu_catalogue());
  EXPECT_EQ(devices["gpu_types"].size(), cluster::gpu_catalogue().size());
  std::ostringstream device_table;
  print_devices(devices, device_table);
  for (const auto& type : cluster::gpu_catalogue()) {
    EXPECT_NE(device_table.str().find(type.name), std::string::npos) << type.name;
  }
}

// 1F1B over 2 stages: the first holds both micro-batches at its peak, the last one.
TEST(ScheduleReport, EachRanksOpsAndPeakInFlight) {
  const auto s = schedule::make_schedule(schedule::ScheduleKind::one_f_one_b, 2, 2, 1, {});
  const nlohmann::json document = schedule_document(s);
  EXPECT_EQ(document["format"], kScheduleFormat);
  ASSERT_EQ(document["per_rank"].size(), 2u);
  EXPECT_EQ(document["per_rank"][0]["peak_in_flight"], 2);
  EXPECT_EQ(document["per_rank"][1]["peak_in_flight"], 1);
  EXPECT_EQ(document["per_rank"][0]["ops"].size(), s.ops[0].size());
  std::ostringstream text;
  print_schedule(s, false, text);
  EXPECT_NE(text.str().find("  0 [2 in flight] "), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("  1 [1 in flight] "), std::string::npos) << text.str();
}

}  // namespace
}  // namespace hyperpipe::report
