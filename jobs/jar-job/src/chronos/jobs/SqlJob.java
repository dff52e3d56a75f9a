package chronos.jobs;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.StatementSet;
import org.apache.flink.table.api.TableEnvironment;

/**
 * A jar job for chronos's "any job" path: runs the statements of a SQL file (one per ';' at a line
 * end; lines starting with "--" are comments), the INSERTs together as one streaming job.
 * Arguments: SQL_FILE [name=value ...] for ${name} in the file.
 */
public final class SqlJob {
    private SqlJob() {}

    public static void main(String[] args) throws Exception {
        String text = Files.readString(Path.of(args[0]));
        StringBuilder body = new StringBuilder();
        for (String line : text.split("\n")) {
            if (!line.strip().startsWith("--")) {
                body.append(line).append('\n');
            }
        }
        String sql = body.toString();
        for (int i = 1; i < args.length; i++) {
            String[] pair = args[i].split("=", 2);
            sql = sql.replace("${" + pair[0] + "}", pair[1]);
        }
        TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        List<String> inserts = new ArrayList<>();
        for (String statement : sql.split(";\\s*(\n|$)")) {
            String s = statement.strip();
            if (s.isEmpty()) {
                continue;
            }
            if (s.toUpperCase().startsWith("INSERT")) {
                inserts.add(s);
            } else {
                env.executeSql(s);
            }
        }
        StatementSet set = env.createStatementSet();
        for (String insert : inserts) {
            set.addInsertSql(insert);
        }
        set.execute();
    }
}
