/*
 * A log record's subject as journal fields, kept apart from the journal
 * so that a unit test can check it.
 */
#include "autoconf.h"

#include <stdbool.h>
#include <stdio.h>

#include "common/log.h"

int
rn_log_subject_fields(const struct rn_log_subject *subj,
    char fields[RN_LOG_SUBJECT_FIELDS][RN_LOG_FIELD_MAX])
{
	bool topic = subj->topic != NULL && subj->topic[0] != '\0';
	int n = 0;

	if (topic)
		snprintf(fields[n++], RN_LOG_FIELD_MAX, "TOPIC=%.*s",
		    RN_LOG_VALUE_MAX, subj->topic);
	/* a partition number alone names nothing */
	if (topic && subj->partition >= 0)
		snprintf(fields[n++], RN_LOG_FIELD_MAX, "PARTITION=%d",
		    (int)subj->partition);
	if (subj->broker >= 0)
		snprintf(fields[n++], RN_LOG_FIELD_MAX, "BROKER=%d",
		    (int)subj->broker);
	if (subj->group != NULL && subj->group[0] != '\0')
		snprintf(fields[n++], RN_LOG_FIELD_MAX, "GROUP=%.*s",
		    RN_LOG_VALUE_MAX, subj->group);
	return n;
}
